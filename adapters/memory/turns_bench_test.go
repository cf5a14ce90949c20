package memory_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// noJobs drops the jobs a benchmark's calls schedule.
type noJobs struct{}

func (noJobs) Schedule(context.Context, platform.Job) error { return nil }

func (noJobs) ScheduleMany(context.Context, []platform.Job) error { return nil }

// benchLine is the turns service on a memory store that already holds
// stored turns in other runs, and an empty run to take turns in.
type benchLine struct {
	svc *turns.Service
	run string
}

func newBenchLine(b *testing.B, stored int) benchLine {
	b.Helper()
	ctx := context.Background()
	store := memory.NewStore()
	clock := platformtest.NewClock(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	bus := events.NewBus(memory.NewEvents(store))
	ents := entities.NewService(memory.NewEntities(store), store, clock)
	qrepo := memory.NewQueues(store)
	qs := queues.NewService(qrepo, ents, store, bus, clock)
	repo := memory.NewTurns(store)
	svc := turns.NewService(repo, qrepo, store, bus, noJobs{}, clock, turns.Hooks{})
	e, err := ents.Create(ctx, "acc_bench", entities.CreateInput{Name: platform.Ptr("Branch")})
	if err != nil {
		b.Fatal(err)
	}
	queue := func() queues.QueueView {
		q, err := qs.Create(ctx, "acc_bench", queues.CreateInput{EntityID: &e.ID, Name: platform.Ptr("Counter"), Type: platform.Ptr(queues.TypeTurn)})
		if err != nil {
			b.Fatal(err)
		}
		return q
	}
	// The stored turns sit in another queue's run, as the turns of other
	// branches and accounts do: half done, half still waiting.
	other := queue()
	for i := range stored {
		st := turns.Waiting
		if i%2 == 0 {
			st = turns.Completed
		}
		t := turns.Turn{ID: fmt.Sprintf("turn_%08d", i), AccountID: "acc_other", QueueID: other.ID, RunID: other.Runs[0].ID,
			Number: i + 1, DisplayCode: fmt.Sprint(i + 1), Status: st, Priority: queues.PriorityNormal, Seq: int64(i + 1),
			PeopleCount: 1, FormResponse: map[string]string{}, IdempotencyKey: platform.Ptr(fmt.Sprintf("key-%08d", i)),
			CreatedAt: clock.Now(), UpdatedAt: clock.Now()}
		if err := repo.Create(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
	return benchLine{svc: svc, run: queue().Runs[0].ID}
}

// BenchmarkMemoryIntake takes turns (with an idempotency key) in an empty
// run of a store holding 0 and 100,000 other turns: the cost must not grow
// with the store.
func BenchmarkMemoryIntake(b *testing.B) {
	for _, stored := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			l := newBenchLine(b, stored)
			ctx := context.Background()
			// Collect the setup's garbage now, so the timed loop does not pay
			// for marking it (the live store's cost per GC cycle is amortised
			// by GOGC: cycles grow rarer as the heap grows).
			runtime.GC()
			b.ResetTimer()
			for i := range b.N {
				key := fmt.Sprintf("bench-key-%d", i)
				if _, _, err := l.svc.Create(ctx, "acc_bench", l.run, turns.CreateInput{IdempotencyKey: &key}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemoryGetTurn reads the full view of a waiting turn in a line of
// 100 in a store holding 0 and 100,000 other turns.
func BenchmarkMemoryGetTurn(b *testing.B) {
	for _, stored := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			l := newBenchLine(b, stored)
			ctx := context.Background()
			var last turns.View
			for range 100 {
				v, _, err := l.svc.Create(ctx, "acc_bench", l.run, turns.CreateInput{})
				if err != nil {
					b.Fatal(err)
				}
				last = v
			}
			b.ResetTimer()
			for range b.N {
				if _, err := l.svc.Get(ctx, "acc_bench", last.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
