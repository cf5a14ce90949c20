package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/qms-dev/qms/ports"
)

var _ ports.RateLimiter = (*RateLimiter)(nil)

// pruneEvery is how often one process deletes past windows. Windows are a
// minute long, so rows older than the previous minute are dead weight.
const pruneEvery = time.Minute

// RateLimiter counts requests per key in fixed one-minute windows stored in
// rate_limits, so every process on the database draws on one budget per
// key. It runs outside any unit of work on purpose: a request counts even
// when its use case rolls back.
type RateLimiter struct {
	db *DB
	// nextPrune is the Unix nanosecond after which the next Allow prunes.
	nextPrune atomic.Int64
}

// NewRateLimiter returns a limiter on db's rate_limits table.
func NewRateLimiter(db *DB) *RateLimiter { return &RateLimiter{db: db} }

// Allow counts one request for key in the window holding now and reports
// whether it stays within limit. The count is one atomic upsert, so
// concurrent requests, in this process or another, never overshoot.
func (l *RateLimiter) Allow(ctx context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	window := now.UTC().Truncate(time.Minute)
	var count int
	err := l.db.Pool.QueryRow(ctx, `
		INSERT INTO rate_limits (key, window_start, count) VALUES ($1, $2, 1)
		ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1
		RETURNING count`, key, window).Scan(&count)
	if err != nil {
		return ports.RateDecision{}, fmt.Errorf("postgres: rate limit %q: %w", key, err)
	}
	l.maybePrune(ctx, window)
	return ports.RateDecision{
		Allowed:   count <= limit,
		Limit:     limit,
		Remaining: max(limit-count, 0),
		Reset:     window.Add(time.Minute),
	}, nil
}

// maybePrune deletes windows that ended before the current one, at most
// once per pruneEvery per process: one indexed delete a minute keeps the
// table at about one row per active key. Failure is harmless (the next
// prune catches up), so it is not reported.
func (l *RateLimiter) maybePrune(ctx context.Context, window time.Time) {
	next := l.nextPrune.Load()
	if window.UnixNano() < next {
		return
	}
	if !l.nextPrune.CompareAndSwap(next, window.Add(pruneEvery).UnixNano()) {
		return // another goroutine prunes this time
	}
	_, _ = l.db.Pool.Exec(ctx, "DELETE FROM rate_limits WHERE window_start < $1", window.Add(-time.Minute))
}
