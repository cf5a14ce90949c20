package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qms-dev/qms/ports"
)

// pruneEvery is how often one process deletes keys idle for a minute.
const pruneEvery = time.Minute

// MaxRateSlice caps the requests of one key a process leases at once, for
// the largest limits; smaller limits lease at most a second's share of
// their minute (see sliceCap).
const MaxRateSlice = 1000

// RateLimiter counts, per key, the requests it let through in one-second
// buckets over the last minute (a sliding window) in rate_limits, so every
// process on the database draws on one budget per key and no 60 s holds
// more than the limit. A request counts from its second until a minute
// after that second ends (60 to 61 s), never less, so the window never
// lets more through; a key's row holds at most 61 buckets whatever the
// limit. The table is UNLOGGED, so spending a request waits for no WAL
// flush. It runs outside any unit of work on purpose: a request counts even
// when its use case rolls back.
//
// A process does not go to the database for every request: it leases a
// slice of a key's budget (one statement adds the whole slice to the
// current second's bucket, if the window has room for it) and serves the
// following requests of that key from the slice in memory. A slice is good
// only within the second it was charged in: a request served at t from a
// slice of second s counts in bucket s, which the database drops 60-61 s
// after s, so it must be that t < s+1 or the request would leave the window
// early. What a slice did not serve is handed back (a decrement of its
// bucket) by the next lease of the key from this process, in the same
// statement. So the total charged never exceeds the limit (no overshoot,
// across any number of processes), and what one process may hold back from
// the others is its unused slice of a key, at most a second's share of the
// limit, until its next lease of that key (undershoot).
type RateLimiter struct {
	db *DB
	// nextPrune is the Unix nanosecond after which the next Allow prunes.
	nextPrune atomic.Int64

	mu   sync.Mutex
	keys map[string]*keySlice
	// leases counts the lease statements sent (benchmarks and tests).
	leases atomic.Int64
}

// keySlice is this process's slice of one key's budget, guarded by the
// limiter's mu.
type keySlice struct {
	// sec is the second the slice was charged in, limit the limit it was
	// leased under.
	sec   int64
	limit int
	// left is what the slice can still serve in second sec.
	left int
	// charged is the key's live count in the database after the last lease
	// (every process's requests and slices), oldest its oldest counted
	// second (hasOldest false: none).
	charged   int
	oldest    int64
	hasOldest bool
	// refused is set when the lease of second sec found the window full:
	// no bucket leaves the window within a second and grants only add to
	// it, so the key stays refused in this process until sec ends.
	refused bool
	// used is what this process served of the key in second sec, prevUsed
	// in the second before: the next slice's size.
	used, prevUsed int
	// retSec and retN are the unused tokens of an ended slice, handed back
	// by the next lease.
	retSec int64
	retN   int
	// inflight is open while a lease of the key is on its way; waiting is
	// how many requests wait for it. One lease per key at a time: the
	// others take from it or lease next, asking for enough for them all.
	inflight chan struct{}
	waiting  int
}

// NewRateLimiter returns a limiter on db's rate_limits table.
func NewRateLimiter(db *DB) *RateLimiter {
	return &RateLimiter{db: db, keys: map[string]*keySlice{}}
}

// leaseSQL leases up to $6 requests of a key in one statement: buckets a
// minute past their second ($5 is the oldest live second) are dropped, the
// unused $8 requests of the slice of second $7 are taken off its bucket
// (never below zero; an emptied bucket goes), and what the live buckets
// leave of the limit ($3), up to $6, is granted and added to its second's
// bucket ($4). The row lock of the upsert serialises one key's leases, in
// this process or another, so the total never exceeds the limit.
const leaseSQL = `
INSERT INTO rate_limits AS r (key, secs, counts, allowed, granted, updated_at)
SELECT $1, CASE WHEN g > 0 THEN ARRAY[$4::bigint] ELSE '{}' END, CASE WHEN g > 0 THEN ARRAY[g] ELSE '{}' END, g > 0, g, $2
FROM (SELECT greatest(least($6::int, $3::int), 0) AS g) AS fresh
ON CONFLICT (key) DO UPDATE SET (secs, counts, allowed, granted, updated_at) = (
	WITH live AS (
		SELECT s, c - CASE WHEN s = $7::bigint THEN least($8::int, c) ELSE 0 END AS c
		FROM unnest(r.secs, r.counts) AS b(s, c) WHERE s >= $5::bigint
	), lease AS (
		SELECT greatest(least($6::int, $3::int - (SELECT coalesce(sum(c), 0) FROM live)), 0)::int AS g
	), merged AS (
		SELECT s, sum(c)::int AS c FROM (
			SELECT s, c FROM live
			UNION ALL
			SELECT $4::bigint, g FROM lease
		) AS b WHERE c > 0 GROUP BY s
	)
	SELECT coalesce((SELECT array_agg(s ORDER BY s) FROM merged), '{}'),
		coalesce((SELECT array_agg(c ORDER BY s) FROM merged), '{}'),
		g > 0, g, $2
	FROM lease)
RETURNING granted, (SELECT coalesce(sum(c), 0) FROM unnest(counts) AS c), secs[1]`

// Allow spends one request of key at now and reports whether it stays
// within limit requests in the sliding minute. Reset is when the oldest
// counted second leaves the window, the next instant Remaining grows (and
// when a refused request may retry). Remaining is what the database had
// left after this process's last lease of the key, plus what is left of
// that lease's slice: exact for a lone process, and low by other
// processes' unused slices otherwise.
//
// A request waits for a lease of its key already on its way rather than
// sending another; it gives up with ctx.
func (l *RateLimiter) Allow(ctx context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	sec := now.Unix()
	l.mu.Lock()
	k := l.keys[key]
	if k == nil {
		k = &keySlice{}
		l.keys[key] = k
	}
	for {
		// A request from a second before the slice's (clocks hand out
		// seconds out of order across goroutines) counts in the slice's:
		// counting it later keeps it in the window longer, never shorter.
		sec = max(sec, k.sec)
		k.roll(sec, limit)
		if k.left > 0 {
			k.left--
			k.used++
			d := k.decision(true, sec)
			l.mu.Unlock()
			l.maybePrune(ctx, now)
			return d, nil
		}
		if k.refused {
			d := k.decision(false, sec)
			l.mu.Unlock()
			return d, nil
		}
		if k.inflight == nil {
			break
		}
		wait := k.inflight
		k.waiting++
		l.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			l.mu.Lock()
			k.waiting--
			l.mu.Unlock()
			return ports.RateDecision{}, fmt.Errorf("postgres: rate limit %q: waiting for a lease: %w", key, ctx.Err())
		}
		l.mu.Lock()
		k.waiting--
	}

	// Lease a slice: enough for what this process used of the key in the
	// last second, in this second so far (so a burst doubles its slices),
	// and for the requests waiting now.
	n := min(max(k.prevUsed, k.used, k.waiting+1), sliceCap(limit))
	retSec, retN := k.retSec, k.retN
	k.retSec, k.retN = 0, 0 // a failed lease may have handed them back: never twice
	done := make(chan struct{})
	k.inflight = done
	l.mu.Unlock()

	l.leases.Add(1)
	var (
		granted, count int
		oldest         *int64
	)
	err := l.db.Pool.QueryRow(ctx, leaseSQL, key, now.UTC(), limit, sec, sec-ports.RateWindowSeconds, n, retSec, retN).
		Scan(&granted, &count, &oldest)

	l.mu.Lock()
	k.inflight = nil
	close(done)
	if err != nil {
		l.mu.Unlock()
		return ports.RateDecision{}, fmt.Errorf("postgres: rate limit %q: %w", key, err)
	}
	if k.sec != sec || k.limit != limit {
		// A request of a later second (or another limit) rolled the key
		// while this lease was out: this request is served from the slice
		// (its second's), the rest goes back with the next lease.
		k.handBack(sec, granted-1)
		d := ports.RateDecisionOf(granted > 0, limit, count-max(granted-1, 0), oldest, sec)
		l.mu.Unlock()
		l.maybePrune(ctx, now)
		return d, nil
	}
	k.charged, k.hasOldest = count, oldest != nil
	if oldest != nil {
		k.oldest = *oldest
	}
	if granted == 0 {
		k.refused = true
		d := k.decision(false, sec)
		l.mu.Unlock()
		return d, nil
	}
	k.left = granted - 1
	k.used++
	d := k.decision(true, sec)
	l.mu.Unlock()
	l.maybePrune(ctx, now)
	return d, nil
}

// roll moves the key to second sec under limit: a slice of an earlier
// second (or another limit) ends, and what it did not serve is handed back
// by the next lease.
func (k *keySlice) roll(sec int64, limit int) {
	if k.sec == sec && k.limit == limit {
		return
	}
	k.handBack(k.sec, k.left)
	if k.sec == sec-1 {
		k.prevUsed = k.used
	} else if k.sec != sec {
		k.prevUsed = 0
	}
	if k.sec != sec {
		k.used = 0
	}
	k.sec, k.limit, k.left, k.refused = sec, limit, 0, false
}

// handBack keeps n unused tokens of the slice of second sec for the next
// lease to give back. One second's tokens are kept at a time: should two
// seconds' be pending (a lease overtaken by a later second), the older are
// left charged, which only holds back budget until they leave the window.
func (k *keySlice) handBack(sec int64, n int) {
	switch {
	case n <= 0:
	case k.retN == 0 || k.retSec < sec:
		k.retSec, k.retN = sec, n
	case k.retSec == sec:
		k.retN += n
	}
}

// decision is the answer at second sec from what the last lease saw, this
// process's unused slice deducted from the count.
func (k *keySlice) decision(allowed bool, sec int64) ports.RateDecision {
	var oldest *int64
	if k.hasOldest {
		oldest = &k.oldest
	}
	return ports.RateDecisionOf(allowed, k.limit, k.charged-k.left, oldest, sec)
}

// sliceCap is the largest slice of a key leased at once under limit: a
// second's share of the minute, rounded up (a limit of 120 leases at most 2),
// at most MaxRateSlice. What one process holds unused is kept from the
// others until its next lease, so a small limit stays fair between
// processes; a large one saves more round trips.
func sliceCap(limit int) int {
	return min(max((limit+ports.RateWindowSeconds-1)/ports.RateWindowSeconds, 1), MaxRateSlice)
}

// pruneIdle deletes the keys with no request in the window before now:
// their budgets are full, which is what a missing row means. It forgets
// this process's slices of keys idle as long: their buckets have left the
// window, so there is nothing to hand back.
func (l *RateLimiter) pruneIdle(ctx context.Context, now time.Time) (int64, error) {
	cut := now.Unix() - ports.RateWindowSeconds - 1
	l.mu.Lock()
	for key, k := range l.keys {
		if k.sec < cut && k.inflight == nil && k.waiting == 0 {
			delete(l.keys, key)
		}
	}
	l.mu.Unlock()
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
