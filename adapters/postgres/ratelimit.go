package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/qms-dev/qms/ports"
)

var (
	_ ports.RateLimiter     = (*RateLimiter)(nil)
	_ ports.RateLimitPruner = (*RateLimiter)(nil)
)

// pruneEvery is how often one process deletes keys idle for a minute.
const pruneEvery = time.Minute

// RateLimiter keeps, per key, the times of the requests it let through in
// the last minute (a sliding log) in rate_limits, so every process on the
// database draws on one budget per key and no 60 s holds more than the
// limit. The table is UNLOGGED, so spending a request waits for no WAL
// flush. It runs outside any unit of work on purpose: a request counts even
// when its use case rolls back.
type RateLimiter struct {
	db *DB
	// nextPrune is the Unix nanosecond after which the next Allow prunes.
	nextPrune atomic.Int64
}

// NewRateLimiter returns a limiter on db's rate_limits table.
func NewRateLimiter(db *DB) *RateLimiter { return &RateLimiter{db: db} }

// allowSQL is one request of a key, in one statement: the hits older than
// a minute are dropped, and now is added when fewer than the limit remain.
// The row lock of the upsert serialises one key's requests, in this
// process or another, so the limit is exact.
const allowSQL = `
INSERT INTO rate_limits AS r (key, hits, allowed, updated_at) VALUES ($1, ARRAY[$2::timestamptz], $3 > 0, $2)
ON CONFLICT (key) DO UPDATE SET
	allowed = (SELECT count(*) FROM unnest(r.hits) h WHERE h > $4) < $3,
	hits = CASE WHEN (SELECT count(*) FROM unnest(r.hits) h WHERE h > $4) < $3
		THEN ARRAY(SELECT h FROM unnest(r.hits) h WHERE h > $4 ORDER BY h) || $2::timestamptz
		ELSE ARRAY(SELECT h FROM unnest(r.hits) h WHERE h > $4 ORDER BY h) END,
	updated_at = $2
RETURNING allowed, cardinality(hits), (SELECT min(h) FROM unnest(hits) h)`

// Allow spends one request of key at now and reports whether it stays
// within limit requests in the minute up to now. Reset is when the oldest
// counted request leaves the minute, the next instant Remaining grows (and
// when a refused request may retry).
func (l *RateLimiter) Allow(ctx context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	now = now.UTC()
	var (
		allowed bool
		count   int
		oldest  *time.Time
	)
	err := l.db.Pool.QueryRow(ctx, allowSQL, key, now, limit, now.Add(-time.Minute)).Scan(&allowed, &count, &oldest)
	if err != nil {
		return ports.RateDecision{}, fmt.Errorf("postgres: rate limit %q: %w", key, err)
	}
	l.maybePrune(ctx, now)
	return decision(allowed, limit, count, oldest, now), nil
}

// decision is the answer for a key with count requests in the minute, the
// oldest at oldest (nil for none).
func decision(allowed bool, limit, count int, oldest *time.Time, now time.Time) ports.RateDecision {
	reset := now.Add(time.Minute)
	if oldest != nil {
		reset = oldest.Add(time.Minute)
	}
	return ports.RateDecision{Allowed: allowed, Limit: limit, Remaining: max(limit-count, 0), Reset: reset}
}

// Prune deletes the keys with no request in the minute before now: their
// budgets are full, which is what a missing row means. It returns how many
// it deleted.
func (l *RateLimiter) Prune(ctx context.Context, now time.Time) (int64, error) {
	tag, err := l.db.Pool.Exec(ctx, "DELETE FROM rate_limits WHERE updated_at < $1", now.UTC().Add(-time.Minute))
	if err != nil {
		return 0, fmt.Errorf("postgres: prune rate limits: %w", err)
	}
	return tag.RowsAffected(), nil
}

// maybePrune prunes at most once per pruneEvery per process: one indexed
// delete a minute keeps the table at about one row per active key. Failure
// is harmless (the next prune catches up), so it is not reported.
func (l *RateLimiter) maybePrune(ctx context.Context, now time.Time) {
	next := l.nextPrune.Load()
	if now.UnixNano() < next {
		return
	}
	if !l.nextPrune.CompareAndSwap(next, now.Add(pruneEvery).UnixNano()) {
		return // another goroutine prunes this time
	}
	_, _ = l.Prune(ctx, now)
}
