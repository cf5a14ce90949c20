package contract

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
)

// sameToken fails unless got is want field for field, instants compared as
// instants: a field one backend keeps and the other drops (as LastSeenAt
// was, before it went) fails here on that backend.
func sameToken(t *testing.T, name string, got, want display.Token) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || (got.RevokedAt == nil) != (want.RevokedAt == nil) ||
		(got.RevokedAt != nil && !got.RevokedAt.Equal(*want.RevokedAt)) {
		t.Fatalf("%s: times %v %v, want %v %v", name, got.CreatedAt, got.RevokedAt, want.CreatedAt, want.RevokedAt)
	}
	got.CreatedAt, got.RevokedAt, want.CreatedAt, want.RevokedAt = time.Time{}, nil, time.Time{}, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %+v, want %+v", name, got, want)
	}
}

// RunDisplayTokens runs the display.Repository contract.
func RunDisplayTokens(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	token := func(o Owned, runID, hash string) display.Token {
		return display.Token{ID: platform.NewID("dtk"), AccountID: o.AccountID, QueueID: o.QueueID, RunID: runID,
			Hash: hash, CreatedAt: now, Options: display.DefaultOptions()}
	}
	seed := func(t *testing.T) (adapterset.Set, Owned, string) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		return set, o, OwnersOf(set).Turn(t, o, o.QueueID).RunID
	}

	t.Run("round trip keeps every field", func(t *testing.T) {
		t.Parallel()
		set, o, run := seed(t)
		tk := token(o, run, "hash-"+platform.NewID("h"))
		tk.Label = platform.Ptr("Lobby")
		tk.Options = display.Options{NextUp: 3, Speech: false, Language: platform.Ptr("pt")}
		if err := set.DisplayTokens.Create(ctx, tk); err != nil {
			t.Fatal(err)
		}
		for name, get := range map[string]func() (display.Token, error){
			"Get":       func() (display.Token, error) { return set.DisplayTokens.Get(ctx, tk.ID) },
			"GetByHash": func() (display.Token, error) { return set.DisplayTokens.GetByHash(ctx, tk.Hash) },
		} {
			got, err := get()
			if err != nil || got.ID != tk.ID || got.AccountID != o.AccountID || got.QueueID != o.QueueID || got.RunID != run ||
				got.Hash != tk.Hash || *got.Label != "Lobby" || !got.CreatedAt.Equal(now) || got.RevokedAt != nil ||
				got.NextUp != 3 || got.Speech || got.Language == nil || *got.Language != "pt" {
				t.Fatalf("%s: %+v, %v", name, got, err)
			}
			sameToken(t, name, got, tk)
		}
		revoked := now.Add(time.Minute)
		tk.RevokedAt, tk.Label = &revoked, nil
		if err := set.DisplayTokens.Update(ctx, tk); err != nil {
			t.Fatal(err)
		}
		got, err := set.DisplayTokens.Get(ctx, tk.ID)
		if err != nil || got.RevokedAt == nil || !got.RevokedAt.Equal(revoked) || got.Label != nil {
			t.Fatalf("after update: %+v, %v", got, err)
		}
		sameToken(t, "after update", got, tk)
	})
	t.Run("missing tokens are NOT_FOUND", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		if _, err := set.DisplayTokens.Get(ctx, "dtk_none"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("Get: %v", err)
		}
		if _, err := set.DisplayTokens.GetByHash(ctx, "none"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("GetByHash: %v", err)
		}
	})
	t.Run("a run's tokens page by id and count the live ones", func(t *testing.T) {
		t.Parallel()
		set, o, run := seed(t)
		other := OwnersOf(set).Turn(t, o, o.QueueID2).RunID
		var ids []string
		for i := range 5 {
			tk := token(o, run, platform.NewID("h"))
			if i == 0 {
				at := now
				tk.RevokedAt = &at
			}
			if err := set.DisplayTokens.Create(ctx, tk); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.ID)
		}
		if err := set.DisplayTokens.Create(ctx, token(o, other, platform.NewID("h"))); err != nil {
			t.Fatal(err)
		}
		sort.Strings(ids)
		first, err := set.DisplayTokens.ListByRun(ctx, run, platform.PageRequest{Limit: 2})
		if err != nil || len(first) != 3 || first[0].ID != ids[0] || first[1].ID != ids[1] {
			t.Fatalf("first page (limit 2 reads 3): %v, %v", first, err)
		}
		rest, err := set.DisplayTokens.ListByRun(ctx, run, platform.PageRequest{Limit: 10, After: ids[1]})
		if err != nil || len(rest) != 3 || rest[0].ID != ids[2] || rest[2].ID != ids[4] {
			t.Fatalf("after %s: %v, %v", ids[1], rest, err)
		}
		if n, err := set.DisplayTokens.CountLive(ctx, run); err != nil || n != 4 {
			t.Fatalf("CountLive = %d, %v; want 4", n, err)
		}
	})
	t.Run("a rolled-back create leaves nothing", func(t *testing.T) {
		t.Parallel()
		set, o, run := seed(t)
		tk := token(o, run, platform.NewID("h"))
		boom := errors.New("boom")
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if err := set.DisplayTokens.Create(ctx, tk); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, err := set.DisplayTokens.Get(ctx, tk.ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("after rollback: %v", err)
		}
	})
}
