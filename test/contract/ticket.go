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

// RunTicketLinks runs the ticket.Repository contract.
func RunTicketLinks(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

	t.Run("stores every field and finds a link by its hash only", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		l := ticket.Link{ID: platform.NewID(ticket.PrefixLink), AccountID: o.AccountID, TurnID: tu.ID, QueueID: tu.QueueID,
			RunID: tu.RunID, Hash: ticket.Hash("qmst_one"), Language: platform.Ptr("pt"), CreatedAt: now}
		if err := set.TicketLinks.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := set.TicketLinks.GetByHash(ctx, l.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, l) {
			t.Fatalf("stored %+v, read back %+v", l, got)
		}
		if _, err := set.TicketLinks.GetByHash(ctx, ticket.Hash("qmst_other")); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("an unknown hash: want NOT_FOUND, got %v", err)
		}
		if _, err := set.TicketLinks.GetByHash(ctx, "qmst_one"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("the value itself must not find the link (only its hash is stored): got %v", err)
		}
	})

	t.Run("counts a turn's links, and a rolled-back create leaves none", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		a, b := OwnersOf(set).Turn(t, o, o.QueueID), OwnersOf(set).Turn(t, o, o.QueueID2)
		for _, turn := range []turns.Turn{a, a, b} {
			l := ticket.Link{ID: platform.NewID(ticket.PrefixLink), AccountID: o.AccountID, TurnID: turn.ID, QueueID: turn.QueueID,
				RunID: turn.RunID, Hash: ticket.Hash(platform.NewID("value")), CreatedAt: now}
			if err := set.TicketLinks.Create(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		boom := platform.Conflict("BOOM", "roll back", nil)
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			l := ticket.Link{ID: platform.NewID(ticket.PrefixLink), AccountID: o.AccountID, TurnID: a.ID, QueueID: a.QueueID,
				RunID: a.RunID, Hash: ticket.Hash("rolled back"), CreatedAt: now}
			if err := set.TicketLinks.Create(ctx, l); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("want the unit's error back, got %v", err)
		}
		for turn, want := range map[string]int{a.ID: 2, b.ID: 1, "turn_none": 0} {
			n, err := set.TicketLinks.CountByTurn(ctx, turn)
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("CountByTurn(%s) = %d, want %d", turn, n, want)
			}
		}
	})

	t.Run("help requests: one open per turn, every field kept, listed by run and status", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		a, b := OwnersOf(set).Turn(t, o, o.QueueID), OwnersOf(set).Turn(t, o, o.QueueID)
		req := func(tu turns.Turn) ticket.HelpRequest {
			return ticket.HelpRequest{ID: platform.NewID(ticket.PrefixHelp), AccountID: o.AccountID, TurnID: tu.ID, QueueID: tu.QueueID,
				RunID: tu.RunID, DisplayCode: tu.DisplayCode, Status: ticket.HelpOpen, RequestedAt: now}
		}
		first := req(a)
		for i, want := range []bool{true, false} {
			r := first
			if i > 0 {
				r = req(a)
			}
			created, err := set.TicketLinks.CreateHelp(ctx, r)
			if err != nil || created != want {
				t.Fatalf("create %d: created %v (want %v), %v", i, created, want, err)
			}
		}
		got, err := set.TicketLinks.GetHelp(ctx, first.ID)
		if err != nil || !reflect.DeepEqual(got, first) {
			t.Fatalf("stored %+v, read back %+v (%v)", first, got, err)
		}
		err = set.UoW.Do(ctx, func(ctx context.Context) error {
			r, err := set.TicketLinks.GetHelpForUpdate(ctx, first.ID)
			if err != nil {
				return err
			}
			at := now.Add(time.Minute)
			r.Status, r.Reply, r.AnsweredAt = ticket.HelpAnswered, platform.Ptr("On my way"), &at
			return set.TicketLinks.UpdateHelp(ctx, r)
		})
		if err != nil {
			t.Fatal(err)
		}
		second := req(a) // answered: the turn may ask again
		if created, err := set.TicketLinks.CreateHelp(ctx, second); err != nil || !created {
			t.Fatalf("asking again after an answer: %v %v", created, err)
		}
		if created, err := set.TicketLinks.CreateHelp(ctx, req(b)); err != nil || !created {
			t.Fatalf("another turn: %v %v", created, err)
		}
		if n, err := set.TicketLinks.CountHelpOfTurn(ctx, a.ID); err != nil || n != 2 {
			t.Fatalf("count %d %v", n, err)
		}
		of, err := set.TicketLinks.HelpOfTurn(ctx, a.ID)
		if err != nil || len(of) != 2 || of[0].ID != first.ID || of[1].ID != second.ID || of[0].Reply == nil || *of[0].Reply != "On my way" ||
			of[0].AnsweredAt == nil || !of[0].AnsweredAt.Equal(now.Add(time.Minute)) {
			t.Fatalf("a turn's requests %+v %v", of, err)
		}
		wantOpen := 1 // second; b's too when it shares a's run
		if b.RunID == a.RunID {
			wantOpen = 2
		}
		open, err := set.TicketLinks.ListHelp(ctx, a.RunID, ticket.HelpOpen, platform.PageRequest{Limit: 10})
		if err != nil || len(open) != wantOpen || open[0].ID != second.ID {
			t.Fatalf("open of the run %+v %v", open, err)
		}
		all, err := set.TicketLinks.ListHelp(ctx, a.RunID, "", platform.PageRequest{Limit: 1})
		if err != nil || len(all) != 2 || all[0].ID != first.ID {
			t.Fatalf("the run's first page (limit 1, one more fetched) %+v %v", all, err)
		}
		rest, err := set.TicketLinks.ListHelp(ctx, a.RunID, "", platform.PageRequest{Limit: 10, After: all[0].ID})
		if err != nil || len(rest) != wantOpen || rest[0].ID != second.ID {
			t.Fatalf("after the first %+v %v", rest, err)
		}
		if _, err := set.TicketLinks.GetHelp(ctx, "hlp_none"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("unknown: %v", err)
		}
	})
}
