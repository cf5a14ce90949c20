package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
)

// TestRaceRowsOfAWaitingTurnDoNotHideItFromNext: while a transaction that
// wrote a row about the first waiting turn is still open (a ticket link
// made by the join page, the access-code use of an intake, a forward, a
// help request, an SLA mark, a notification), dispatch/next from another
// connection calls that turn: at once, or after waiting for the writer,
// never the one behind it. A foreign key to turns takes FOR KEY SHARE on
// the turn's row until the writer commits, and a next that locked turns
// FOR UPDATE SKIP LOCKED passed the turn by (docs/turns.md, the lock
// order).
func TestRaceRowsOfAWaitingTurnDoNotHideItFromNext(t *testing.T) {
	p := newPGTurns(t, queues.CreateInput{})
	ctx := context.Background()
	now := time.Now().UTC()
	create := func() turns.View {
		t.Helper()
		v, _, err := p.svc.Create(ctx, p.account, p.run, turns.CreateInput{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// A finished turn, the source of a forward whose destination waits.
	done := create()
	if _, err := p.svc.Cancel(ctx, p.account, done.ID); err != nil {
		t.Fatal(err)
	}
	links, codes, flows := postgres.NewTicketLinks(p.db), postgres.NewAccessCodeTurns(p.db), postgres.NewWorkflow(p.db)
	marks, msgs := postgres.NewTurns(p.db), postgres.NewNotify(p.db)
	forward := func(from, to string) workflow.Forward {
		return workflow.Forward{ID: platform.NewID("fwd"), AccountID: p.account, LinkID: platform.NewID("qlk"),
			FromTurnID: from, FromQueueID: p.queue, FromRunID: p.run, ToQueueID: p.queue, Trigger: "manual",
			Status: "FORWARDED", ToTurnID: &to, ToRunID: &p.run, CreatedAt: now, UpdatedAt: now}
	}
	cases := []struct {
		name  string
		write func(ctx context.Context, turn turns.View) error
	}{
		{"ticket link", func(ctx context.Context, turn turns.View) error {
			return links.Create(ctx, ticket.Link{ID: platform.NewID(ticket.PrefixLink), AccountID: p.account,
				TurnID: turn.ID, QueueID: p.queue, RunID: p.run, Hash: platform.NewID("hash"), CreatedAt: now})
		}},
		{"access-code use", func(ctx context.Context, turn turns.View) error {
			return codes.Record(ctx, accesscodes.TurnCode{TurnID: turn.ID, AccessCodeID: platform.NewID("acc"),
				Code: "CAR1", AccountID: p.account, QueueID: p.queue, RunID: p.run, CreatedAt: now})
		}},
		{"forward from the turn", func(ctx context.Context, turn turns.View) error {
			_, err := flows.CreateForward(ctx, forward(turn.ID, done.ID))
			return err
		}},
		{"forward to the turn", func(ctx context.Context, turn turns.View) error {
			_, err := flows.CreateForward(ctx, forward(done.ID, turn.ID))
			return err
		}},
		{"help request", func(ctx context.Context, turn turns.View) error {
			_, err := links.CreateHelp(ctx, ticket.HelpRequest{ID: platform.NewID("hlp"), AccountID: p.account,
				TurnID: turn.ID, QueueID: p.queue, RunID: p.run, DisplayCode: turn.DisplayCode, Status: "OPEN",
				RequestedAt: now})
			return err
		}},
		{"SLA mark", func(ctx context.Context, turn turns.View) error {
			_, err := marks.MarkOnce(ctx, turn.ID, "sla_wait", now)
			return err
		}},
		{"notification", func(ctx context.Context, turn turns.View) error {
			_, err := msgs.Insert(ctx, notify.Message{ID: platform.NewID("ntf"), AccountID: p.account, TurnID: turn.ID,
				QueueID: p.queue, RunID: p.run, Moment: "joined", Channel: "sms", To: "+34600000000", Language: "en",
				Status: "QUEUED", CreatedAt: now, UpdatedAt: now})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			emptyLine(t, p)
			first, second := create(), create()
			written, release := make(chan error, 1), make(chan struct{})
			writer := make(chan error, 1)
			go func() {
				writer <- p.db.Do(ctx, func(ctx context.Context) error {
					err := tc.write(ctx, first)
					written <- err
					if err != nil {
						return err
					}
					<-release
					return nil
				})
			}()
			if err := <-written; err != nil {
				close(release)
				t.Fatalf("write the row: %v", err)
			}
			// next on the other service (another process's connection). It
			// may wait for the writer; it must not pass the turn by.
			called := make(chan turns.View, 1)
			failed := make(chan error, 1)
			go func() {
				v, err := p.other.Next(ctx, p.account, p.run, turns.CallInput{})
				if err != nil {
					failed <- err
					return
				}
				called <- v
			}()
			var v turns.View
			select {
			case v = <-called:
				close(release)
			case err := <-failed:
				close(release)
				t.Fatalf("next while the writer is open: %v", err)
			case <-time.After(2 * time.Second):
				// Waiting for the writer is allowed: end it and see.
				close(release)
				select {
				case v = <-called:
				case err := <-failed:
					t.Fatalf("next after the writer ended: %v", err)
				}
			}
			if err := <-writer; err != nil {
				t.Fatalf("writer: %v", err)
			}
			if v.ID != first.ID {
				t.Fatalf("next called %s (number %d) while %s (number %d) waited ahead of it: out of line order",
					v.ID, v.Number, first.ID, first.Number)
			}
			if got, err := p.svc.Next(ctx, p.account, p.run, turns.CallInput{}); err != nil || got.ID != second.ID {
				t.Fatalf("second next: %v %v, want %s", got.ID, err, second.ID)
			}
		})
	}
}

// emptyLine calls the run's waiting turns until none is left, so that a case
// starts on an empty line whatever the one before it left.
func emptyLine(t *testing.T, p *pgTurns) {
	t.Helper()
	for {
		_, err := p.svc.Next(context.Background(), p.account, p.run, turns.CallInput{})
		if platform.IsCode(err, turns.CodeNoWaitingTurns) {
			return
		}
		if err != nil {
			t.Fatalf("drain the line: %v", err)
		}
	}
}

// TestDeletedBranchTakesItsTurnsRows: deleting a branch deletes its
// queues and their turns (the cascades of entity_id and queue_id), and
// with them every row about a turn: ticket links, help requests, SLA
// marks, access-code uses, forwards. Help requests and marks were left
// behind while migration 0163 had dropped their keys (0230 restores them).
func TestDeletedBranchTakesItsTurnsRows(t *testing.T) {
	p := newPGTurns(t, queues.CreateInput{})
	ctx := context.Background()
	now := time.Now().UTC()
	v, _, err := p.svc.Create(ctx, p.account, p.run, turns.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	err = p.db.Do(ctx, func(ctx context.Context) error {
		if err := postgres.NewTicketLinks(p.db).Create(ctx, ticket.Link{ID: platform.NewID(ticket.PrefixLink),
			AccountID: p.account, TurnID: v.ID, QueueID: p.queue, RunID: p.run, Hash: platform.NewID("hash"),
			CreatedAt: now}); err != nil {
			return err
		}
		if _, err := postgres.NewTicketLinks(p.db).CreateHelp(ctx, ticket.HelpRequest{ID: platform.NewID("hlp"),
			AccountID: p.account, TurnID: v.ID, QueueID: p.queue, RunID: p.run, DisplayCode: v.DisplayCode,
			Status: "OPEN", RequestedAt: now}); err != nil {
			return err
		}
		_, err := postgres.NewTurns(p.db).MarkOnce(ctx, v.ID, "sla_wait", now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var entityID string
	if err := p.db.Pool.QueryRow(ctx, `SELECT entity_id FROM queues WHERE id = $1`, p.queue).Scan(&entityID); err != nil {
		t.Fatal(err)
	}
	ents := entities.NewService(postgres.NewEntities(p.db), p.db, platform.SystemClock{})
	if err := ents.Delete(ctx, p.account, entityID); err != nil {
		t.Fatal(err)
	}
	for _, rows := range []string{"turns WHERE id = $1", "ticket_links WHERE turn_id = $1",
		"help_requests WHERE turn_id = $1", "turn_marks WHERE turn_id = $1"} {
		var n int
		if err := p.db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+rows, v.ID).Scan(&n); err != nil {
			t.Fatalf("%s: %v", rows, err)
		}
		if n != 0 {
			t.Errorf("%s: %d rows of the deleted branch's turn left", rows, n)
		}
	}
}
