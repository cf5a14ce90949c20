package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestGetForViewReadsWhatGetReads: the turn's view statement, decoded
// from raw values, gives the turn Get scans, field for field, in every
// shape a turn takes (every optional field set or not, every status,
// negative seqs, odd form answers, times before 2000), and what else it
// reads is what the separate reads give: the run's line version and
// status and the queue's service times.
func TestGetForViewReadsWhatGetReads(t *testing.T) {
	p := openProcess(t, pgtest.URL(t))
	ctx := context.Background()
	owned := p.owners.Seed(t)
	base := p.owners.Turn(t, owned, owned.QueueID)

	// A service time for the queue's summary, through a finished turn.
	served := 42.5
	done := base
	done.ID = platform.NewID(platform.PrefixTurn)
	done.Seq++
	done.Status = turns.Completed
	done.ServiceSeconds = &served
	at := base.CreatedAt.Add(time.Minute)
	done.StartedAt, done.FinishedAt = &base.CreatedAt, &at
	if err := p.turns.Create(ctx, done); err != nil {
		t.Fatal(err)
	}

	s := func(v string) *string { return &v }
	old := time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	later := base.CreatedAt.Add(90 * time.Second)
	variants := []struct {
		name   string
		change func(tu *turns.Turn)
	}{
		{"waiting, bare", func(*turns.Turn) {}},
		{"waiting, every optional field", func(tu *turns.Turn) {
			tu.Phone, tu.NotifyWhatsapp = s("+351 912 345 678"), true
			tu.FormResponse = map[string]string{"name": "Zoë \"Z\" <x>", "b": "", "ключ": "значение"}
			tu.IdempotencyKey, tu.AppointmentID = s("key-1"), s("appt_1")
			tu.ArrivedAt = &old
			tu.Priority, tu.Seq, tu.PeopleCount, tu.Reentries = queues.PriorityVeryHigh, -7, 4, 2
			tu.HeldFrom, tu.ReopenTo = turns.HeldAfterCall, turns.Called
		}},
		{"called", func(tu *turns.Turn) {
			tu.Status, tu.CallCount, tu.CalledAt = turns.Called, 1, &later
			tu.Priority = queues.PriorityLow
		}},
		{"held", func(tu *turns.Turn) { tu.Status, tu.HeldFrom = turns.Held, turns.HeldWhileWaiting }},
		{"completed", func(tu *turns.Turn) {
			tu.Status, tu.ServiceSeconds = turns.Completed, &served
			tu.CalledAt, tu.StartedAt, tu.FinishedAt = &later, &later, &later
		}},
		{"waitlisted", func(tu *turns.Turn) { tu.Status = turns.Waitlisted }},
		{"waiting, after another service", func(*turns.Turn) {}},
	}
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			tu := base
			tu.ID = platform.NewID(platform.PrefixTurn)
			tu.Seq += int64(100 + i)
			v.change(&tu)
			if err := p.turns.Create(ctx, tu); err != nil {
				t.Fatal(err)
			}
			want, err := p.turns.Get(ctx, tu.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, vc, err := p.turns.GetForView(ctx, tu.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("GetForView's turn\n%+v\nGet's\n%+v", got, want)
			}
			if vc.Queue.ID != tu.QueueID {
				t.Errorf("queue %q, want %q", vc.Queue.ID, tu.QueueID)
			}
			line, err := p.turns.LineVersion(ctx, tu.RunID)
			if err != nil {
				t.Fatal(err)
			}
			service, err := p.turns.RecentServiceSeconds(ctx, tu.QueueID, turns.ServiceSamples)
			if err != nil {
				t.Fatal(err)
			}
			if vc.LineVersion != line || !vc.RunOpen || !slices.Equal(vc.ServiceSeconds, service) || len(service) == 0 {
				t.Errorf("line %d, open %v, service %v; want %d, true, %v", vc.LineVersion, vc.RunOpen,
					vc.ServiceSeconds, line, service)
			}
		})
	}

	if _, _, err := p.turns.GetForView(ctx, "turn_missing"); !platform.IsCode(err, platform.CodeNotFound) {
		t.Errorf("a missing turn: %v, want not found", err)
	}
}
