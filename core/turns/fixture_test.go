package turns_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/location"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/testkit"
)

const account = "acc_1"

// monday10 is a Monday, 10:00 UTC.
var monday10 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// fixture is the turns service on the memory store with a fake clock and
// a job scheduler that records what it is asked to schedule.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	clock    *platformtest.Clock
	store    *memory.Store
	repo     turns.Repository
	queues   *queues.Service
	svc      *turns.Service
	events   *memory.Events
	jobs     *testkit.Jobs
	entityID string
	ents     *entities.Service
	// queuesRepo and bus let a test build a second service on the store.
	queuesRepo queues.Repository
	bus        *events.Bus
}

type locationT = location.Location

// queuesEntity creates an entity of another account.
func (f *fixture) queuesEntity(accountID string) (string, error) {
	e, err := f.ents.Create(f.ctx, accountID, entities.CreateInput{Name: platform.Ptr("Other branch")})
	return e.ID, err
}

func newFixture(t *testing.T, guards ...turns.IntakeGuard) *fixture {
	t.Helper()
	clock := platformtest.NewClock(monday10)
	// The memory adapter set, as bootstrap builds it; jobs are recorded
	// instead of run.
	set, store := testkit.MemorySet(t, clock)
	ev := set.Events.(*memory.Events)
	bus := events.NewBus(ev)
	ents := entities.NewService(set.Entities, store, clock)
	qrepo := set.Queues
	qs := queues.NewService(qrepo, ents, store, bus, clock)
	repo := set.Turns
	jobs := testkit.NewJobs(store)
	svc := turns.NewService(repo, qrepo, store, bus, jobs, clock, turns.Hooks{Guards: guards})
	bus.Subscribe(svc)
	e, err := ents.Create(context.Background(), account, entities.CreateInput{Name: platform.Ptr("Main branch")})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: context.Background(), clock: clock, store: store, repo: repo, queues: qs, svc: svc,
		events: ev, jobs: jobs, entityID: e.ID, ents: ents, queuesRepo: qrepo, bus: bus}
}

// queue creates a TURN queue with in's settings and returns it with its
// open run.
func (f *fixture) queue(in queues.CreateInput) (queues.QueueView, string) {
	f.t.Helper()
	in.EntityID = &f.entityID
	if in.Name == nil {
		in.Name = platform.Ptr("Pharmacy")
	}
	if in.Type == nil {
		in.Type = platform.Ptr(queues.TypeTurn)
	}
	q, err := f.queues.Create(f.ctx, account, in)
	if err != nil {
		f.t.Fatalf("create queue: %v", err)
	}
	return q, q.Runs[0].ID
}

// take creates a turn that must succeed.
func (f *fixture) take(runID string, in turns.CreateInput) turns.View {
	f.t.Helper()
	v, _, err := f.svc.Create(f.ctx, account, runID, in)
	if err != nil {
		f.t.Fatalf("create turn: %v", err)
	}
	return v
}

func (f *fixture) get(id string) turns.View {
	f.t.Helper()
	v, err := f.svc.Get(f.ctx, account, id)
	if err != nil {
		f.t.Fatalf("get turn: %v", err)
	}
	return v
}

// force stores a turn as changed by fn, bypassing the rules: a test sets
// the state it wants to start from.
func (f *fixture) force(id string, fn func(t *turns.Turn)) {
	f.t.Helper()
	t, err := f.repo.Get(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	fn(&t)
	err = f.store.Do(f.ctx, func(ctx context.Context) error {
		if err := f.repo.Update(ctx, t); err != nil {
			return err
		}
		// The test changed the turn behind the rules: readers reload.
		_, err := f.repo.BumpLine(ctx, t.RunID, turns.LineChange{Reset: true})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// data is an event's data as a map, to check its members by their wire
// names.
func data(e platform.Event) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		panic(err)
	}
	return m
}

// eventNames lists the names of the account's events after the id.
func (f *fixture) eventsOf(turnID string) []platform.Event {
	evs, _ := f.events.List(f.ctx, account, "", 0)
	var out []platform.Event
	for _, e := range evs {
		if data(e)["turnId"] == turnID {
			out = append(out, e)
		}
	}
	return out
}

func code(err error) string {
	if e, ok := platform.AsError(err); ok {
		return e.Code
	}
	if err != nil {
		return "non-domain: " + err.Error()
	}
	return ""
}

func wantCode(t *testing.T, err error, want string) *platform.Error {
	t.Helper()
	if code(err) != want {
		t.Fatalf("want %s, got %v", want, err)
	}
	e, _ := platform.AsError(err)
	return e
}

func pos(v turns.View) int {
	if v.Position == nil {
		return 0
	}
	return *v.Position
}
