package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// runGates is the process's turnstile per run (turns.RunGate): one intake
// of a run at a time goes on to PostgreSQL, the others wait here, in
// arrival order. Without it, on a busy run every waiter sits in the run's
// row lock with a pooled connection and a snapshot, and those snapshots
// keep the old versions of the run's counter and line rows, updated by
// every intake, from being pruned: each holder then reads through a longer
// chain of dead versions, and the run's throughput falls as its queue of
// waiters grows (issue 16, P3h).
//
// The holder may hand the gate on to the first waiter in two ways: plain
// (the waiter runs its own transaction, as after EnterRun's leave), or
// with the holder's transaction still open (an intake chain,
// intakechain.go), when the waiter came through RunIntake and may join one.
type runGates struct {
	mu sync.Mutex
	m  map[string]*runGate
	// stats counts what the intake chains did (IntakeChainStats).
	stats struct{ joined, failedAlone, reruns atomic.Int64 }
}

type runGate struct {
	busy    bool // held
	waiters []*gateWaiter
}

// gateWaiter waits for the gate: turn receives nil (the gate is its, in a
// transaction of its own) or the chain whose open transaction it joins.
type gateWaiter struct {
	turn     chan *intakeChain
	canChain bool
}

// EnterRun waits for the run's gate in this process.
func (r *Turns) EnterRun(ctx context.Context, runID string) (func(), error) {
	return r.db.gates.enter(ctx, runID)
}

func (g *runGates) enter(ctx context.Context, runID string) (func(), error) {
	e, c, err := g.wait(ctx, runID, false)
	if err != nil {
		return nil, err
	}
	if c != nil {
		// Never: a waiter that cannot chain is handed only the gate.
		panic("postgres: an intake chain handed to EnterRun")
	}
	return func() { g.release(runID, e) }, nil
}

// wait takes the run's gate, or waits for it in arrival order. A waiter
// that may chain can be handed an open chain instead (c non-nil): it then
// runs inside the chain's transaction and must hand it on or commit it.
// When ctx ends while waiting, the waiter leaves the queue; one handed a
// turn at that very moment gets it all the same, with ctx's error beside
// it when it is a chain (it must still pass that on), released here when
// it is the bare gate.
func (g *runGates) wait(ctx context.Context, runID string, canChain bool) (*runGate, *intakeChain, error) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*runGate{}
	}
	e := g.m[runID]
	if e == nil {
		e = &runGate{}
		g.m[runID] = e
	}
	if !e.busy {
		e.busy = true
		g.mu.Unlock()
		return e, nil, nil
	}
	w := &gateWaiter{turn: make(chan *intakeChain, 1), canChain: canChain}
	e.waiters = append(e.waiters, w)
	g.mu.Unlock()
	select {
	case c := <-w.turn:
		return e, c, nil
	case <-ctx.Done():
	}
	err := fmt.Errorf("postgres: wait for run %s: %w", runID, ctx.Err())
	g.mu.Lock()
	if i := slices.Index(e.waiters, w); i >= 0 {
		e.waiters = slices.Delete(e.waiters, i, i+1)
		g.forget(runID, e)
		g.mu.Unlock()
		return nil, nil, err
	}
	g.mu.Unlock()
	// Handed its turn as ctx ended.
	c := <-w.turn
	if c == nil {
		g.release(runID, e)
		return nil, nil, err
	}
	return e, c, err
}

// release opens the gate: the first waiter gets it, in a transaction of
// its own.
func (g *runGates) release(runID string, e *runGate) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(e.waiters) > 0 {
		w := e.waiters[0]
		e.waiters = slices.Delete(e.waiters, 0, 1)
		w.turn <- nil
		return
	}
	e.busy = false
	g.forget(runID, e)
}

// handOn gives the gate with c's open transaction to the first waiter,
// when there is one and it may join a chain; false otherwise (the holder
// commits).
func (g *runGates) handOn(e *runGate, c *intakeChain) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(e.waiters) == 0 || !e.waiters[0].canChain {
		return false
	}
	w := e.waiters[0]
	e.waiters = slices.Delete(e.waiters, 0, 1)
	w.turn <- c
	return true
}

// forget drops a gate nobody holds or waits for; g.mu held.
func (g *runGates) forget(runID string, e *runGate) {
	if !e.busy && len(e.waiters) == 0 && g.m[runID] == e {
		delete(g.m, runID)
	}
}
