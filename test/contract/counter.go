package contract

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/platform"
)

// RunCounterLinks runs the counter.Repository contract: links stored and
// found by hash only, paged and counted by queue; presses claimed once
// per (link, key) — also by concurrent units of work — and listed by turn.
func RunCounterLinks(t *testing.T, newSet NewSet) {
	runCounterLinks1(t, newSet)
	runCounterLinks2(t, newSet)
}

// runCounterLinks1 is part 1 of RunCounterLinks: stores every field, finds a
// link by its hash only, pages and counts by queue; a press is claimed once
// per link and key; a rolled-back claim frees the key.
func runCounterLinks1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	link := func(o Owned, queueID, value string) counter.Link {
		return counter.Link{ID: platform.NewID(counter.PrefixLink), AccountID: o.AccountID, QueueID: queueID,
			Hash: counter.HashToken(value), CreatedAt: now, Options: counter.Options{StationIDs: []string{}}}
	}
	t.Run("stores every field, finds a link by its hash only, pages and counts by queue", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		l := link(o, o.QueueID, "qmsc_one")
		l.Label, l.Language, l.ShowDetails, l.StationIDs = platform.Ptr("Desk A"), platform.Ptr("fr"), true, []string{"st_1", "st_2"}
		if err := set.CounterLinks.CreateLink(ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := set.CounterLinks.GetLinkByHash(ctx, l.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, l) {
			t.Fatalf("stored %+v, read back %+v", l, got)
		}
		if _, err := set.CounterLinks.GetLinkByHash(ctx, "qmsc_one"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("the value itself must not find the link: got %v", err)
		}
		if _, err := set.CounterLinks.GetLink(ctx, "ctr_none"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("an unknown id: want NOT_FOUND, got %v", err)
		}
		b := link(o, o.QueueID, "qmsc_two")
		other := link(o, o.QueueID2, "qmsc_three")
		for _, x := range []counter.Link{b, other} {
			if err := set.CounterLinks.CreateLink(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		at := now.Add(time.Minute)
		b.RevokedAt = &at
		if err := set.CounterLinks.UpdateLink(ctx, b); err != nil {
			t.Fatal(err)
		}
		if n, err := set.CounterLinks.CountLiveLinks(ctx, o.QueueID); err != nil || n != 1 {
			t.Fatalf("CountLiveLinks = %d, %v; want 1", n, err)
		}
		page, err := set.CounterLinks.ListLinks(ctx, o.QueueID, platform.PageRequest{Limit: 1})
		if err != nil || len(page) != 2 || page[0].ID > page[1].ID {
			t.Fatalf("ListLinks limit 1: %+v, %v (want 2 rows, by id)", page, err)
		}
		rest, err := set.CounterLinks.ListLinks(ctx, o.QueueID, platform.PageRequest{Limit: 10, After: page[0].ID})
		if err != nil || len(rest) != 1 || rest[0].ID != page[1].ID || rest[0].RevokedAt == nil {
			t.Fatalf("ListLinks after: %+v, %v", rest, err)
		}
	})

	t.Run("a press is claimed once per link and key; a rolled-back claim frees the key", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		l := link(o, o.QueueID, "qmsc_press")
		l2 := link(o, o.QueueID, "qmsc_press2")
		for _, x := range []counter.Link{l, l2} {
			if err := set.CounterLinks.CreateLink(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		press := func(linkID, key string) counter.Press {
			return counter.Press{ID: platform.NewID(counter.PrefixPress), AccountID: o.AccountID, LinkID: linkID, QueueID: o.QueueID,
				Key: key, Action: counter.ActNext, StationID: platform.Ptr("st_1"), RequestHash: "h1", At: now}
		}
		boom := errors.New("boom")
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if _, claimed, err := set.CounterLinks.ClaimPress(ctx, press(l.ID, "key-1")); err != nil || !claimed {
				t.Fatalf("first claim: %v %v", claimed, err)
			}
			return boom
		})
		if err != boom {
			t.Fatalf("want the unit's error, got %v", err)
		}
		first := press(l.ID, "key-1")
		err = set.UoW.Do(ctx, func(ctx context.Context) error {
			_, claimed, err := set.CounterLinks.ClaimPress(ctx, first)
			if err == nil && !claimed {
				t.Fatal("a rolled-back claim still holds its key")
			}
			if err != nil {
				return err
			}
			return set.CounterLinks.SetPressTurn(ctx, first.ID, tu.ID)
		})
		if err != nil {
			t.Fatal(err)
		}
		again := press(l.ID, "key-1")
		again.RequestHash = "h2"
		var prev counter.Press
		var claimed bool
		err = set.UoW.Do(ctx, func(ctx context.Context) error {
			var err error
			prev, claimed, err = set.CounterLinks.ClaimPress(ctx, again)
			return err
		})
		if err != nil || claimed || prev.ID != first.ID || prev.RequestHash != "h1" || prev.TurnID == nil || *prev.TurnID != tu.ID {
			t.Fatalf("a second claim of the key: %+v claimed %v, %v", prev, claimed, err)
		}
		// Another link's key of the same spelling is its own.
		if err := set.UoW.Do(ctx, func(ctx context.Context) error {
			p := press(l2.ID, "key-1")
			if _, claimed, err := set.CounterLinks.ClaimPress(ctx, p); err != nil || !claimed {
				t.Fatalf("another link's key: %v %v", claimed, err)
			}
			return set.CounterLinks.SetPressTurn(ctx, p.ID, tu.ID)
		}); err != nil {
			t.Fatal(err)
		}
		ps, err := set.CounterLinks.PressesOfTurn(ctx, tu.ID)
		if err != nil || len(ps) != 2 || ps[0].ID != first.ID || ps[0].At != now || ps[0].StationID == nil || *ps[0].StationID != "st_1" {
			t.Fatalf("PressesOfTurn: %+v, %v", ps, err)
		}
	})
}

// runCounterLinks2 is part 2 of RunCounterLinks: concurrent claims of one
// key: one claims, the others find it.
func runCounterLinks2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	link := func(o Owned, queueID, value string) counter.Link {
		return counter.Link{ID: platform.NewID(counter.PrefixLink), AccountID: o.AccountID, QueueID: queueID,
			Hash: counter.HashToken(value), CreatedAt: now, Options: counter.Options{StationIDs: []string{}}}
	}
	t.Run("concurrent claims of one key: one claims, the others find it", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		l := link(o, o.QueueID, "qmsc_race")
		if err := set.CounterLinks.CreateLink(ctx, l); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		claims, found := 0, 0
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := counter.Press{ID: platform.NewID(counter.PrefixPress), AccountID: o.AccountID, LinkID: l.ID, QueueID: o.QueueID,
					Key: "same-key", Action: counter.ActNext, RequestHash: "h", At: now}
				err := set.UoW.Do(ctx, func(ctx context.Context) error {
					_, claimed, err := set.CounterLinks.ClaimPress(ctx, p)
					if err != nil {
						return err
					}
					// Hold the claim a moment, as a dispatch would.
					time.Sleep(20 * time.Millisecond)
					mu.Lock()
					defer mu.Unlock()
					if claimed {
						claims++
					} else {
						found++
					}
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if claims != 1 || found != 7 {
			t.Fatalf("%d claims and %d finds of one key, want 1 and 7", claims, found)
		}
	})
}
