package contract

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/join"
	"github.com/qms-dev/qms/core/platform"
)

// sameJoinLink fails unless got is want field for field, instants
// compared as instants.
func sameJoinLink(t *testing.T, name string, got, want join.Link) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || (got.RevokedAt == nil) != (want.RevokedAt == nil) ||
		(got.RevokedAt != nil && !got.RevokedAt.Equal(*want.RevokedAt)) {
		t.Fatalf("%s: times %v %v, want %v %v", name, got.CreatedAt, got.RevokedAt, want.CreatedAt, want.RevokedAt)
	}
	eq := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	if got.ID != want.ID || got.AccountID != want.AccountID || got.QueueID != want.QueueID || got.Hash != want.Hash ||
		got.Kiosk != want.Kiosk || !eq(got.Label, want.Label) || !eq(got.Language, want.Language) || !eq(got.PhoneRegion, want.PhoneRegion) {
		t.Fatalf("%s: got %+v, want %+v", name, got, want)
	}
}

// RunJoinLinks runs the join.Repository contract.
func RunJoinLinks(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	link := func(o Owned, queueID string) join.Link {
		return join.Link{ID: platform.NewID(join.PrefixLink), AccountID: o.AccountID, QueueID: queueID,
			Hash: join.Hash(platform.NewID("value")), CreatedAt: now}
	}

	t.Run("round trip keeps every field, found by id and by hash only", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		l := link(o, o.QueueID)
		l.Label, l.Language, l.Kiosk, l.PhoneRegion = platform.Ptr("Door"), platform.Ptr("es"), true, platform.Ptr("ES")
		if err := set.JoinLinks.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		byID, err := set.JoinLinks.Get(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameJoinLink(t, "Get", byID, l)
		byHash, err := set.JoinLinks.GetByHash(ctx, l.Hash)
		if err != nil {
			t.Fatal(err)
		}
		sameJoinLink(t, "GetByHash", byHash, l)
		if _, err := set.JoinLinks.GetByHash(ctx, join.Hash("qmsj_other")); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("an unknown hash: want NOT_FOUND, got %v", err)
		}
		if _, err := set.JoinLinks.Get(ctx, "jnl_none"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("an unknown id: want NOT_FOUND, got %v", err)
		}
		revoked := now.Add(time.Minute)
		l.RevokedAt, l.Label, l.Language = &revoked, nil, nil
		if err := set.JoinLinks.Update(ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := set.JoinLinks.Get(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameJoinLink(t, "after Update", got, l)
	})

	t.Run("lists a queue's links in pages, counts the live ones, rolls back", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		var ids []string
		for i := 0; i < 3; i++ {
			l := link(o, o.QueueID)
			if i == 2 {
				at := now
				l.RevokedAt = &at
			}
			if err := set.JoinLinks.Create(ctx, l); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, l.ID)
		}
		if err := set.JoinLinks.Create(ctx, link(o, o.QueueID2)); err != nil {
			t.Fatal(err)
		}
		boom := platform.Conflict("BOOM", "roll back", nil)
		if err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if err := set.JoinLinks.Create(ctx, link(o, o.QueueID)); err != nil {
				return err
			}
			return boom
		}); err != boom {
			t.Fatalf("want the unit's error back, got %v", err)
		}
		first, err := set.JoinLinks.ListByQueue(ctx, o.QueueID, platform.PageRequest{Limit: 2})
		if err != nil || len(first) != 3 {
			t.Fatalf("first page: %d links (want limit+1 = 3), %v", len(first), err)
		}
		rest, err := set.JoinLinks.ListByQueue(ctx, o.QueueID, platform.PageRequest{Limit: 2, After: first[1].ID})
		if err != nil || len(rest) != 1 || rest[0].ID != first[2].ID {
			t.Fatalf("second page: %+v, %v", rest, err)
		}
		sort.Strings(ids)
		for i, l := range append(first[:2], rest...) {
			if l.ID != ids[i] {
				t.Fatalf("page order: link %d is %s, want %s (the queue's links by id, the rolled-back one absent)", i, l.ID, ids[i])
			}
		}
		for q, want := range map[string]int{o.QueueID: 2, o.QueueID2: 1, "que_none": 0} {
			n, err := set.JoinLinks.CountLive(ctx, q)
			if err != nil || n != want {
				t.Errorf("CountLive(%s) = %d, %v; want %d", q, n, err, want)
			}
		}
	})
}
