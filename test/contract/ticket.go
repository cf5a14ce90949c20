package contract

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
)

// TicketLinksHarness is a fresh ticket link repository, the unit of work
// it joins, and the owners its links reference (a turn).
type TicketLinksHarness struct {
	Repo   ticket.Repository
	UoW    platform.UnitOfWork
	Owners Owners
}

// RunTicketLinks runs the ticket.Repository contract.
func RunTicketLinks(t *testing.T, newHarness func(t *testing.T) TicketLinksHarness) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

	t.Run("stores every field and finds a link by its hash only", func(t *testing.T) {
		h := newHarness(t)
		o := h.Owners.Seed(t)
		tu := h.Owners.Turn(t, o, o.QueueID)
		l := ticket.Link{ID: platform.NewID(ticket.PrefixLink), AccountID: o.AccountID, TurnID: tu.ID, QueueID: tu.QueueID,
			RunID: tu.RunID, Hash: ticket.Hash("qmst_one"), Language: platform.Ptr("pt"), CreatedAt: now}
		if err := h.Repo.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := h.Repo.GetByHash(ctx, l.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, l) {
			t.Fatalf("stored %+v, read back %+v", l, got)
		}
		if _, err := h.Repo.GetByHash(ctx, ticket.Hash("qmst_other")); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("an unknown hash: want NOT_FOUND, got %v", err)
		}
		if _, err := h.Repo.GetByHash(ctx, "qmst_one"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("the value itself must not find the link (only its hash is stored): got %v", err)
		}
	})

	t.Run("counts a turn's links, and a rolled-back create leaves none", func(t *testing.T) {
		h := newHarness(t)
		o := h.Owners.Seed(t)
		a, b := h.Owners.Turn(t, o, o.QueueID), h.Owners.Turn(t, o, o.QueueID2)
		for _, turn := range []turns.Turn{a, a, b} {
			l := ticket.Link{ID: platform.NewID(ticket.PrefixLink), AccountID: o.AccountID, TurnID: turn.ID, QueueID: turn.QueueID,
				RunID: turn.RunID, Hash: ticket.Hash(platform.NewID("value")), CreatedAt: now}
			if err := h.Repo.Create(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		boom := platform.Conflict("BOOM", "roll back", nil)
		err := h.UoW.Do(ctx, func(ctx context.Context) error {
			l := ticket.Link{ID: platform.NewID(ticket.PrefixLink), AccountID: o.AccountID, TurnID: a.ID, QueueID: a.QueueID,
				RunID: a.RunID, Hash: ticket.Hash("rolled back"), CreatedAt: now}
			if err := h.Repo.Create(ctx, l); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("want the unit's error back, got %v", err)
		}
		for turn, want := range map[string]int{a.ID: 2, b.ID: 1, "turn_none": 0} {
			n, err := h.Repo.CountByTurn(ctx, turn)
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("CountByTurn(%s) = %d, want %d", turn, n, want)
			}
		}
	})
}
