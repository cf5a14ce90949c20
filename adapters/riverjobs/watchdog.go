package riverjobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// Defaults of the watchdog's Options.
const (
	// DefaultWatchdogInterval is how often the watchdog looks at River.
	DefaultWatchdogInterval = 10 * time.Second
	// DefaultStuckAfter is how long a job may stay available, past its
	// time, in a queue this process works while the process works none,
	// before the watchdog restarts River: no fetch took it that long, with
	// the database answering.
	DefaultStuckAfter = time.Minute
)

// watch restarts River when it has stopped working without being asked
// to: its client stopped by itself (Stopped closed while the runner runs),
// or its producers fetch nothing while jobs of their queues are overdue
// and the database answers, twice in a row. River 0.51 recovers from a
// database fault by itself (its completer requeues a batch it gave up on,
// its producers, elector and notifier retry without end): the watchdog is
// the net under that, for what a failover may leave that it does not.
// The same loop makes available again, every OrphanCheckInterval, the jobs
// this process fetched and never received (orphans.go).
func (r *Runner) watch(ctx context.Context, client *river.Client[pgx.Tx]) {
	tick := time.NewTicker(r.opts.WatchdogInterval)
	defer tick.Stop()
	orphanTick := time.NewTicker(r.opts.OrphanCheckInterval)
	defer orphanTick.Stop()
	suspicious := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-orphanTick.C:
			if n, err := r.requeueOrphans(ctx); err != nil {
				r.opts.Logger.Debug("riverjobs: orphans", "err", err.Error()) // the database is away: the next pass
			} else if n > 0 {
				r.opts.Logger.Warn("riverjobs: jobs fetched by this process and never received (the database went away) made available again", "jobs", n)
			}
			continue
		case <-client.Stopped():
			if ctx.Err() != nil || r.stopping.Load() {
				return // Stop was called
			}
			r.opts.Logger.Error("riverjobs: watchdog: River stopped by itself; starting it again")
			client = r.restart(ctx, client, false)
			suspicious = 0
			continue
		case <-tick.C:
		}
		if r.stopping.Load() {
			return
		}
		stuck, err := r.stuck(ctx)
		switch {
		case err != nil || !stuck:
			suspicious = 0
		case suspicious == 0:
			suspicious = 1
		default:
			r.opts.Logger.Error("riverjobs: watchdog: jobs overdue and none worked; restarting River",
				"stuck_after", r.opts.StuckAfter.String())
			client = r.restart(ctx, client, true)
			suspicious = 0
		}
	}
}

// stuck reports whether a job of a queue this process works has been
// available for StuckAfter past its time while the process worked none in
// that time.
func (r *Runner) stuck(ctx context.Context) (bool, error) {
	if time.Since(time.Unix(0, r.lastWorked.Load())) < r.opts.StuckAfter {
		return false, nil
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var overdue bool
	// A paused queue (River's QueuePause) is left alone: its jobs wait on
	// purpose.
	err := r.db.Pool.QueryRow(qctx, `SELECT EXISTS (SELECT 1 FROM river_job j
		WHERE j.state = 'available' AND j.queue = ANY($1) AND j.scheduled_at < now() - make_interval(secs => $2)
		AND NOT EXISTS (SELECT 1 FROM river_queue q WHERE q.name = j.queue AND q.paused_at IS NOT NULL))`,
		r.queueNames(), r.opts.StuckAfter.Seconds()).Scan(&overdue)
	if err != nil {
		return false, fmt.Errorf("riverjobs: watchdog: %w", err)
	}
	return overdue, nil
}

// restart stops client (when it still runs) and starts River again on a
// new client, retrying until it starts or ctx ends. Jobs cut short by the
// stop are retried (at least once, as always).
func (r *Runner) restart(ctx context.Context, old *river.Client[pgx.Tx], stop bool) *river.Client[pgx.Tx] {
	if stop {
		sctx, cancel := context.WithTimeout(ctx, r.opts.StopTimeout)
		if err := old.StopAndCancel(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			r.opts.Logger.Warn("riverjobs: watchdog: stop River", "err", err.Error())
		}
		cancel()
	}
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		r.mu.Lock()
		r.client = nil // Client builds a new one
		r.mu.Unlock()
		client, err := r.Client()
		if err == nil {
			if err = client.Start(ctx); err == nil {
				r.restarts.Add(1)
				r.lastWorked.Store(time.Now().UnixNano())
				r.opts.Logger.Info("riverjobs: watchdog: River started again")
				return client
			}
		}
		r.opts.Logger.Error("riverjobs: watchdog: start River", "err", err.Error(), "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return old
		case <-time.After(wait):
		}
	}
}

// Restarts returns how often the watchdog started River again.
func (r *Runner) Restarts() int64 { return r.restarts.Load() }

// queueNames are the River queues this process works.
func (r *Runner) queueNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := []string{river.QueueDefault}
	seen := map[string]bool{river.QueueDefault: true}
	for _, k := range r.kinds {
		if k.Queue != "" && !seen[k.Queue] {
			seen[k.Queue] = true
			names = append(names, k.Queue)
		}
	}
	return names
}
