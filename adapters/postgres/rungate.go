package postgres

import (
	"context"
	"fmt"
	"sync"
)

// runGates is the process's turnstile per run (turns.RunGate): one intake
// of a run at a time goes on to PostgreSQL, the others wait here, in
// arrival order. Without it, on a busy run every waiter sits in the run's
// row lock with a pooled connection and a snapshot, and those snapshots
// keep the old versions of the run's counter and line rows, updated by
// every intake, from being pruned: each holder then reads through a longer
// chain of dead versions, and the run's throughput falls as its queue of
// waiters grows (issue 16, P3h).
type runGates struct {
	mu sync.Mutex
	m  map[string]*runGate
}

type runGate struct {
	slot  chan struct{}
	users int // holders and waiters; the gate is dropped at zero
}

// EnterRun waits for the run's gate in this process.
func (r *Turns) EnterRun(ctx context.Context, runID string) (func(), error) {
	return r.db.gates.enter(ctx, runID)
}

func (g *runGates) enter(ctx context.Context, runID string) (func(), error) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*runGate{}
	}
	e := g.m[runID]
	if e == nil {
		e = &runGate{slot: make(chan struct{}, 1)}
		g.m[runID] = e
	}
	e.users++
	g.mu.Unlock()
	select {
	case e.slot <- struct{}{}:
		return func() {
			<-e.slot
			g.leave(runID, e)
		}, nil
	case <-ctx.Done():
		g.leave(runID, e)
		return nil, fmt.Errorf("postgres: wait for run %s: %w", runID, ctx.Err())
	}
}

func (g *runGates) leave(runID string, e *runGate) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.users--; e.users == 0 {
		delete(g.m, runID)
	}
}
