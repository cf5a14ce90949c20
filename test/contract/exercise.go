package contract

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/test/testkit"
)

// NewSet builds a fresh, empty adapter set of one backend for a subtest.
type NewSet func(t *testing.T) adapterset.Set

// Option tunes Exercise to a backend.
type Option func(*options)

type options struct{ concurrent bool }

// Concurrent says the backend runs transactions side by side (PostgreSQL),
// so the suites also check row locks and SKIP LOCKED.
func Concurrent(o *options) { o.concurrent = true }

// Exercise runs every port's suite against the backend newSet builds, each
// suite on sets of its own: call it once per backend (River's driver test
// idea). A port added to adapterset.Set gets its suite here, once, and both
// backends run it.
func Exercise(t *testing.T, newSet NewSet, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	suites := []struct {
		name string
		run  func(t *testing.T, newSet NewSet)
	}{
		{"Turns", func(t *testing.T, newSet NewSet) { RunTurns(t, newSet, o.concurrent) }},
		{"TurnLocks", func(t *testing.T, newSet NewSet) { RunTurnLocks(t, newSet, o.concurrent) }},
		{"Appointments", RunAppointments},
		{"AppointmentRaces", RunAppointmentRaces},
		{"AppointmentsWaitingToJoin", RunAppointmentsWaitingToJoin},
		{"UnitOfWork", RunUnitOfWork},
		{"Foundation", RunFoundationRepositories},
		{"AccessCodes", RunAccessCodes},
		{"Analytics", RunAnalytics},
		{"Workflow", RunWorkflow},
		{"Forwards", RunForwards},
		{"EventLog", RunEventLog},
		{"Webhooks", RunWebhooks},
		{"EventFanOut", RunEventFanOut},
		{"TicketLinks", RunTicketLinks},
		{"CounterLinks", RunCounterLinks},
		{"StreamLog", RunStreamLogPositions},
		{"StreamNotifier", RunStreamNotifier},
		{"Notify", RunNotify},
		{"JoinLinks", RunJoinLinks},
		{"DisplayTokens", RunDisplayTokens},
		{"RateLimiter", RunRateLimiter},
		{"Pruner", RunPruner},
		{"JobRunner", RunJobRunner},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t, newSet)
		})
	}
}

// OwnersOf is the builder over a set's repositories.
func OwnersOf(s adapterset.Set) Owners { return testkit.OwnersOf(s) }

// NewAccount stores a fresh account in the set and returns its id.
func NewAccount(t *testing.T, s adapterset.Set) string {
	t.Helper()
	id := platform.NewID(platform.PrefixAccount)
	newAccountID(t, s, id)
	return id
}

func newAccountID(t *testing.T, s adapterset.Set, id string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	err := s.Accounts.CreateAccount(context.Background(), accounts.Account{ID: id, Name: "Contract", Plan: "premium", CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
}

// deleteEntity deletes an entity in a unit of work, as the entities
// service does (the memory cascade runs inside one).
func deleteEntity(s adapterset.Set) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		return s.UoW.Do(ctx, func(ctx context.Context) error { return s.Entities.Delete(ctx, id) })
	}
}

func eventLog(t *testing.T, s adapterset.Set) EventLog {
	l, ok := s.Events.(EventLog)
	if !ok {
		t.Fatalf("%T cannot list the events it stores", s.Events)
	}
	return l
}

// Subscribe returns a bus over the set's event store with the set's event
// copies subscribed, as bootstrap wires it.
func Subscribe(s adapterset.Set) *events.Bus { return testkit.Bus(s) }
