package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runGates lets one holder per run through at a time, lets other runs
// pass, gives up a wait when its context ends, and forgets a run nobody
// holds or waits for.
func TestRunGatesOneAtATimePerRun(t *testing.T) {
	var g runGates
	ctx := context.Background()
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leave, err := g.enter(ctx, "run_a")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(100 * time.Microsecond)
			inside.Add(-1)
			leave()
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d intakes of one run inside the gate at once; want 1", most.Load())
	}

	leaveA, err := g.enter(ctx, "run_a")
	if err != nil {
		t.Fatal(err)
	}
	leaveB, err := g.enter(ctx, "run_b") // another run passes
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := g.enter(short, "run_a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the deadline: %v; want DeadlineExceeded", err)
	}
	leaveA()
	leaveB()
	if len(g.m) != 0 {
		t.Fatalf("gates left after everyone left: %d; want 0", len(g.m))
	}
}
