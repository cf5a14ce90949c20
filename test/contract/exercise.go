package contract

import (
	"context"
	"reflect"
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
	// Each suite names the fields of adapterset.Set whose ports it checks:
	// a port added to the set without a suite fails every run here.
	suites := []struct {
		name  string
		ports []string
		run   func(t *testing.T, newSet NewSet)
	}{
		{"Turns", []string{"Turns"}, func(t *testing.T, newSet NewSet) { RunTurns(t, newSet, o.concurrent) }},
		{"TurnLocks", []string{"Turns"}, func(t *testing.T, newSet NewSet) { RunTurnLocks(t, newSet, o.concurrent) }},
		{"Appointments", []string{"Appointments"}, RunAppointments},
		{"AppointmentRaces", []string{"Appointments"}, RunAppointmentRaces},
		{"AppointmentsWaitingToJoin", []string{"Appointments"}, RunAppointmentsWaitingToJoin},
		{"UnitOfWork", []string{"UoW"}, RunUnitOfWork},
		{"StorageHealth", []string{"Pinger", "Faults"}, RunStorageHealth},
		{"Foundation", []string{"Accounts", "Entities", "Queues"}, RunFoundationRepositories},
		{"RowLocks", []string{"Turns", "Queues", "Forwards", "Notify", "Accounts"}, RunRowLocks},
		{"AccessCodes", []string{"AccessCodes"}, RunAccessCodes},
		{"AccessCodeTurns", []string{"AccessCodeTurns"}, RunAccessCodeTurns},
		{"Analytics", []string{"Analytics"}, RunAnalytics},
		{"Workflow", []string{"Workflow"}, RunWorkflow},
		{"Forwards", []string{"Forwards"}, RunForwards},
		{"EventLog", []string{"Events", "Calls"}, RunEventLog},
		{"Webhooks", []string{"Webhooks"}, RunWebhooks},
		{"EventFanOut", []string{"Webhooks", "Jobs"}, RunEventFanOut},
		{"TicketLinks", []string{"TicketLinks"}, RunTicketLinks},
		{"CounterLinks", []string{"CounterLinks"}, RunCounterLinks},
		{"StreamLog", []string{"StreamLog"}, RunStreamLogPositions},
		{"StreamNotifier", []string{"StreamNotifier"}, RunStreamNotifier},
		{"Notify", []string{"Notify"}, RunNotify},
		{"JoinLinks", []string{"JoinLinks"}, RunJoinLinks},
		{"DisplayTokens", []string{"DisplayTokens"}, RunDisplayTokens},
		{"RateLimiter", []string{"RateLimiter"}, RunRateLimiter},
		{"Pruner", []string{"Events", "Webhooks", "Forwards", "RateLimiter", "TicketLinks", "Turns"}, RunPruner},
		{"JobRunner", []string{"JobRunner", "Jobs"}, RunJobRunner},
	}
	covered := map[string]bool{}
	for _, s := range suites {
		for _, p := range s.ports {
			covered[p] = true
		}
	}
	if missing := withoutSuite(covered); len(missing) > 0 {
		t.Fatalf("ports of adapterset.Set with no contract suite: %v", missing)
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t, newSet)
		})
	}
}

// withoutSuite names the port fields of adapterset.Set (its interface
// fields) that no suite covers. Resealer is not a port: it is the
// PostgreSQL set's start-up re-sealing of webhook secrets
// (TestPostgresWebhookSecretsAtRest).
func withoutSuite(covered map[string]bool) []string {
	var out []string
	st := reflect.TypeFor[adapterset.Set]()
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Type.Kind() == reflect.Interface && f.Name != "Resealer" && !covered[f.Name] {
			out = append(out, f.Name)
		}
	}
	return out
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

// eventLog is the set's event store with its List: no use case lists the
// log (List is no port), but the suites read back what was appended, so
// both backends' stores have the method and this is where it is asked for.
func eventLog(t testing.TB, s adapterset.Set) EventLog {
	l, ok := s.Events.(EventLog)
	if !ok {
		t.Fatalf("%T cannot list the events it stores", s.Events)
	}
	return l
}

// Subscribe returns a bus over the set's event store with the set's event
// copies subscribed, as bootstrap wires it.
func Subscribe(s adapterset.Set) *events.Bus { return testkit.Bus(s) }
