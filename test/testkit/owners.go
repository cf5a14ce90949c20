package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Owners writes the rows other resources hang from (an account, its
// entities and queues) through one adapter set's repositories, so suites of
// repositories with foreign keys can run on Postgres as on memory.
type Owners struct {
	Accounts accounts.Repository
	Entities entities.Repository
	Queues   queues.Repository
	// Turns is needed by Turn only.
	Turns turns.Repository
}

// Owned is an account with one entity and two queues of that entity.
type Owned struct {
	AccountID string
	EntityID  string
	QueueID   string
	QueueID2  string
}

// OwnersOf is the builder over the repositories of an adapter set.
func OwnersOf(s adapterset.Set) Owners {
	return Owners{Accounts: s.Accounts, Entities: s.Entities, Queues: s.Queues, Turns: s.Turns}
}

// Seed creates an account, an entity and two queues.
func (o Owners) Seed(t *testing.T) Owned {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	acc := accounts.Account{ID: platform.NewID(platform.PrefixAccount), Name: "Test", Plan: accounts.PlanPremium, CreatedAt: now, UpdatedAt: now}
	if err := o.Accounts.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	ent := entities.Entity{ID: platform.NewID(platform.PrefixEntity), AccountID: acc.ID, Name: "Branch", CreatedAt: now, UpdatedAt: now}
	if err := o.Entities.Create(ctx, ent); err != nil {
		t.Fatal(err)
	}
	out := Owned{AccountID: acc.ID, EntityID: ent.ID}
	for _, id := range []*string{&out.QueueID, &out.QueueID2} {
		q := queues.Queue{ID: platform.NewID(platform.PrefixQueue), AccountID: acc.ID, EntityID: ent.ID,
			Name: "Queue", Type: queues.TypeTurn, CreatedAt: now, UpdatedAt: now}
		if err := o.Queues.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		*id = q.ID
	}
	return out
}

// Turn creates an open run of the queue and a waiting turn in it, and
// returns the turn.
func (o Owners) Turn(t *testing.T, owned Owned, queueID string) turns.Turn {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	run := queues.Run{ID: platform.NewID(platform.PrefixRun), AccountID: owned.AccountID, QueueID: queueID,
		Status: queues.RunOpen, IntakeOpen: true, OpenedAt: &now, CreatedAt: now, UpdatedAt: now}
	if err := o.Queues.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	tu := turns.Turn{ID: platform.NewID(platform.PrefixTurn), AccountID: owned.AccountID, QueueID: queueID, RunID: run.ID,
		Number: 1, DisplayCode: "1", Status: turns.Waiting, Priority: queues.PriorityNormal, Seq: now.UnixNano(),
		PeopleCount: 1, FormResponse: map[string]string{}, RequestHash: "x", CreatedAt: now, UpdatedAt: now}
	if err := o.Turns.Create(ctx, tu); err != nil {
		t.Fatal(err)
	}
	return tu
}

// MemorySet is the memory adapter set over a fresh store, as bootstrap
// builds it, for core tests: they take a ready set instead of assembling
// repositories by hand. The store is returned too, for tests that look
// inside it; it is also the set's UoW.
func MemorySet(t testing.TB, clock platform.Clock) (adapterset.Set, *memory.Store) {
	t.Helper()
	store := memory.NewStore()
	s, err := adapterset.Memory(store, adapterset.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return s, store
}

// Bus is the event bus over s's event store with s's event copies (the
// memory stream log) subscribed, as bootstrap wires it.
func Bus(s adapterset.Set) *events.Bus {
	b := events.NewBus(s.Events)
	for _, c := range s.EventCopies {
		b.Subscribe(c)
	}
	return b
}
