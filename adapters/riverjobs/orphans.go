package riverjobs

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Defaults of the orphan sweep's Options.
const (
	// DefaultOrphanCheckInterval is how often the process looks for jobs it
	// fetched and never got.
	DefaultOrphanCheckInterval = 5 * time.Second
	// DefaultOrphanAfter is how long such a job must have been running
	// before it is made available again: far longer than a fetch takes to
	// come back, so a fetch still on its way is not taken for lost.
	DefaultOrphanAfter = 10 * time.Second
)

// A fetch marks jobs running (and attempted by this client) in the
// statement that returns them. When the database goes away between its
// commit and its answer (a primary killed or demoted under it), the jobs
// stay running in the table, no worker of this process has them, and only
// River's rescuer would take them back: after RescueStuckJobsAfter (20 s)
// plus up to its 30 s interval. A webhook delivery was 47 s late that way
// in the failover test. The process knows which jobs it works, so it makes
// the others that it fetched available again itself, within seconds.
//
// At least once still holds: a job this process works, or finished lately
// (its completion may still wait in River's completer, which puts a batch
// back and retries while the database is away), is never made available
// again by this.

// orphanMemory is how long a finished job's ID is remembered once the
// database answers again: longer than River's completer takes to record a
// batch it had to put back (a few seconds of retries).
const orphanMemory = 2 * time.Minute

// workLedger is what this process works and recently finished, by job ID.
type workLedger struct {
	mu       sync.Mutex
	running  map[int64]int // attempts of it in progress (normally one)
	finished map[int64]time.Time
	// A finished job's completion waits in River's completer while the
	// database is away, however long that is: its ID is kept while the
	// sweep's query fails, and for orphanMemory after it answers again.
	failing      bool
	healthySince time.Time
}

func newWorkLedger() *workLedger {
	return &workLedger{running: map[int64]int{}, finished: map[int64]time.Time{}}
}

func (l *workLedger) begin(id int64) {
	l.mu.Lock()
	l.running[id]++
	l.mu.Unlock()
}

func (l *workLedger) end(id int64) {
	l.mu.Lock()
	if l.running[id]--; l.running[id] <= 0 {
		delete(l.running, id)
	}
	l.finished[id] = time.Now()
	l.mu.Unlock()
}

// answered records whether the database answered the sweep's query.
func (l *workLedger) answered(ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !ok:
		l.failing = true
	case l.failing:
		l.failing, l.healthySince = false, time.Now()
	}
}

// known reports whether the job is worked here now or was finished here
// lately (see orphanMemory), and forgets older finishes.
func (l *workLedger) known(ids []int64) map[int64]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.failing {
		for id, at := range l.finished {
			if at.Before(l.healthySince) {
				at = l.healthySince
			}
			if time.Since(at) > orphanMemory {
				delete(l.finished, id)
			}
		}
	}
	out := map[int64]bool{}
	for _, id := range ids {
		if _, ok := l.running[id]; ok {
			out[id] = true
		} else if _, ok := l.finished[id]; ok {
			out[id] = true
		}
	}
	return out
}

// requeueOrphans makes available again the jobs running for OrphanAfter
// whose last attempt is this process's (one of its River clients) and
// that it neither works nor finished lately, and returns how many.
func (r *Runner) requeueOrphans(ctx context.Context) (int, error) {
	r.mu.Lock()
	clients := append([]string(nil), r.clientIDs...)
	r.mu.Unlock()
	if len(clients) == 0 {
		return 0, nil
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := r.db.Pool.Query(qctx, `SELECT id FROM river_job
		WHERE state = 'running' AND attempted_by[array_length(attempted_by, 1)] = ANY($1)
		AND attempted_at < now() - make_interval(secs => $2)`, clients, r.opts.OrphanAfter.Seconds())
	r.ledger.answered(err == nil)
	if err != nil {
		return 0, fmt.Errorf("riverjobs: orphans: %w", err)
	}
	var candidates []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("riverjobs: orphans: %w", err)
		}
		candidates = append(candidates, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("riverjobs: orphans: %w", err)
	}
	if len(candidates) == 0 {
		return 0, nil
	}
	known := r.ledger.known(candidates)
	var orphans []int64
	for _, id := range candidates {
		if !known[id] {
			orphans = append(orphans, id)
		}
	}
	if len(orphans) == 0 {
		return 0, nil
	}
	// The error is recorded as River's rescuer records its own; the
	// conditions are checked again, should the job have moved meanwhile.
	tag, err := r.db.Pool.Exec(qctx, `UPDATE river_job SET state = 'available', scheduled_at = now(),
		errors = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt,
			'error', 'riverjobs: fetched by this process but never received (the database went away); made available again', 'trace', ''))
		WHERE id = ANY($1) AND state = 'running' AND attempted_by[array_length(attempted_by, 1)] = ANY($2)
		AND attempted_at < now() - make_interval(secs => $3)`, orphans, clients, r.opts.OrphanAfter.Seconds())
	if err != nil {
		return 0, fmt.Errorf("riverjobs: orphans: requeue: %w", err)
	}
	n := int(tag.RowsAffected())
	r.orphans.Add(int64(n))
	return n, nil
}

// Orphans returns how many jobs this process made available again after
// their fetch was lost.
func (r *Runner) Orphans() int64 { return r.orphans.Load() }
