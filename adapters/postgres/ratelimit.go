package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/qms-dev/qms/ports"
)

var _ ports.RateLimiter = (*RateLimiter)(nil)

// pruneEvery is how often one process deletes keys idle for a minute.
const pruneEvery = time.Minute

// RateLimiter counts, per key, the requests it let through in one-second
// buckets over the last minute (a sliding window) in rate_limits, so every
// process on the database draws on one budget per key and no 60 s holds
// more than the limit. A request counts from its second until a minute
// after that second ends (60 to 61 s), never less, so the window never
// lets more through; a key's row holds at most 61 buckets whatever the
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

// allowSQL is one request of a key, in one statement: buckets a minute past
// their second ($5 is the oldest live second) are dropped, and the request
// is added to its second's bucket ($4) when the live ones hold fewer than
// the limit ($3). The row lock of the upsert serialises one key's requests,
// in this process or another, so the limit is exact.
const allowSQL = `
INSERT INTO rate_limits AS r (key, secs, counts, allowed, updated_at)
VALUES ($1, ARRAY[$4::bigint], ARRAY[1], $3 > 0, $2)
ON CONFLICT (key) DO UPDATE SET
	allowed = (SELECT coalesce(sum(c), 0) FROM unnest(r.secs, r.counts) AS b(s, c) WHERE s >= $5) < $3,
	(secs, counts) = (
		SELECT coalesce(array_agg(s ORDER BY s), '{}'), coalesce(array_agg(c ORDER BY s), '{}')
		FROM (SELECT s, sum(c)::int AS c FROM (
			SELECT s, c FROM unnest(r.secs, r.counts) AS b(s, c) WHERE s >= $5
			UNION ALL
			SELECT $4::bigint, 1
			WHERE (SELECT coalesce(sum(c), 0) FROM unnest(r.secs, r.counts) AS b(s, c) WHERE s >= $5) < $3
		) AS live GROUP BY s) AS g),
	updated_at = $2
RETURNING allowed, (SELECT coalesce(sum(c), 0) FROM unnest(counts) AS c), secs[1]`

// Allow spends one request of key at now and reports whether it stays
// within limit requests in the sliding minute. Reset is when the oldest
// counted second leaves the window, the next instant Remaining grows (and
// when a refused request may retry).
func (l *RateLimiter) Allow(ctx context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	sec := now.Unix()
	var (
		allowed bool
		count   int
		oldest  *int64
	)
	err := l.db.Pool.QueryRow(ctx, allowSQL, key, now.UTC(), limit, sec, sec-ports.RateWindowSeconds).
		Scan(&allowed, &count, &oldest)
	if err != nil {
		return ports.RateDecision{}, fmt.Errorf("postgres: rate limit %q: %w", key, err)
	}
	l.maybePrune(ctx, now)
	return ports.RateDecisionOf(allowed, limit, count, oldest, sec), nil
}

// pruneIdle deletes the keys with no request in the window before now:
// their budgets are full, which is what a missing row means.
func (l *RateLimiter) pruneIdle(ctx context.Context, now time.Time) (int64, error) {
	tag, err := l.db.Pool.Exec(ctx, "DELETE FROM rate_limits WHERE updated_at < $1", now.UTC().Add(-(ports.RateWindowSeconds+1)*time.Second))
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
	_, _ = l.pruneIdle(ctx, now)
}
