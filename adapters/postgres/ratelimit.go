package postgres

import (
	"context"
	"fmt"
	"maps"
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

// rateReturn is n unused tokens of second sec's bucket to hand back.
type rateReturn struct {
	sec int64
	n   int
}

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
// the others is its unused slices of a key (the current second's and the
// one leased ahead, see ahead), each at most a second's share of the
// limit, until its next lease of that key (undershoot).
type RateLimiter struct {
	db *DB
	// nextPrune is the Unix nanosecond after which the next Allow prunes.
	nextPrune atomic.Int64

	mu   sync.Mutex
	keys map[string]*keySlice
	// leases counts the keys' leases sent (benchmarks and tests),
	// statements the statements that sent them (leases ahead go several
	// in one).
	leases, statements atomic.Int64
	// waits counts the requests that waited for the database: sent a
	// lease, or waited for one on its way (tests).
	waits atomic.Int64
	// aheads tracks the leases ahead on their way (tests wait for them).
	aheads sync.WaitGroup
	// pending are the leases ahead asked for and not sent yet, gathering
	// whether a goroutine will send them (aheadGather), hurry cuts its
	// wait short (tests). Guarded by mu.
	pending   []aheadLease
	gathering bool
	hurry     chan struct{}
	// gatherFrom is the time (a request's) the first pending lease was
	// asked at: a request aheadGather later hurries them (the gathering's
	// wall-clock wait is the other bound). gatherDone is closed when the
	// pending leases have landed: it is their keys' inflight from the
	// moment they are asked, so a key's requests wait for its lease ahead
	// (and hurry it) rather than send another.
	gatherFrom time.Time
	gatherDone chan struct{}
}

// aheadLease is a lease ahead asked for: key's slice of second sec+1, n
// requests under limit, asked at now (its second sec).
type aheadLease struct {
	key   string
	k     *keySlice
	sec   int64
	limit int
	n     int
	now   time.Time
	// ret is what the lease hands back (the key's ret when it was sent).
	ret [2]rateReturn
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
	// secs and counts are the key's buckets in the database after the
	// last lease (every process's requests and slices), ascending.
	secs   []int64
	counts []int32
	// nextSec and nextLeft are the slice leased ahead for the second
	// after sec (nextSec 0: none; nextSec set with nextLeft 0 while the
	// lease ahead is out).
	nextSec  int64
	nextLeft int
	// refused is set when the lease of second sec found the window full:
	// no bucket leaves the window within a second and grants only add to
	// it, so the key stays refused in this process until sec ends.
	refused bool
	// used is what this process served of the key in second sec, prevUsed
	// in the second before: the next slice's size.
	used, prevUsed int
	// retSec and retN are the unused tokens of an ended slice, handed back
	// by the next lease.
	// Two seconds' at most: the current slice's and the one leased ahead.
	ret [2]rateReturn
	// out is what a lease on its way hands back: still in the snapshot's
	// buckets, no longer this process's to serve.
	out [2]rateReturn
	// inflight is open while a lease of the key is on its way; waiting is
	// how many requests wait for it. One lease per key at a time: the
	// others take from it or lease next, asking for enough for them all.
	inflight chan struct{}
	waiting  int
}

// NewRateLimiter returns a limiter on db's rate_limits table.
func NewRateLimiter(db *DB) *RateLimiter {
	return &RateLimiter{db: db, keys: map[string]*keySlice{}, hurry: make(chan struct{}, 1)}
}

// leaseAheadSQL is leaseSQL for the leases ahead a process gathered
// (aheadGather), one key each in unnest's arrays, in one statement: $1
// the keys, $2 the times they were asked at, $3 the limits, $4 the seconds
// charged, $5 the oldest live seconds, $6 the sizes, $7-$10 what each hands
// back. Sent off any request's path; the comment tells it apart in traces
// and pg_stat_activity. Each key's row is what leaseSQL makes of it (the
// update finds its key's parameters by its position in $1). The rows are
// locked in the keys' order, so two processes' statements never wait for
// each other in a cycle (a lease on a request's path locks one row).
const leaseAheadSQL = `/* rate limit lease ahead */
INSERT INTO rate_limits AS r (key, secs, counts, allowed, granted, updated_at)
SELECT x.key, CASE WHEN g > 0 THEN ARRAY[x.target] ELSE '{}' END, CASE WHEN g > 0 THEN ARRAY[g] ELSE '{}' END, g > 0, g, x.now
FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::bigint[], $6::int[]) AS x(key, now, lim, target, n),
	LATERAL (SELECT greatest(least(x.n, x.lim), 0) AS g) AS fresh
ORDER BY x.key
ON CONFLICT (key) DO UPDATE SET (secs, counts, allowed, granted, updated_at) = (
	WITH p AS (
		SELECT ($2::timestamptz[])[i] AS now, ($3::int[])[i] AS lim, ($4::bigint[])[i] AS target, ($5::bigint[])[i] AS oldest,
			($6::int[])[i] AS n, ($7::bigint[])[i] AS r0s, ($8::int[])[i] AS r0n, ($9::bigint[])[i] AS r1s, ($10::int[])[i] AS r1n
		FROM (SELECT array_position($1::text[], r.key) AS i) AS at
	), live AS (
		SELECT s, c - CASE WHEN s = p.r0s THEN least(p.r0n, c) WHEN s = p.r1s THEN least(p.r1n, c) ELSE 0 END AS c
		FROM p, unnest(r.secs, r.counts) AS b(s, c) WHERE s >= p.oldest
	), lease AS (
		SELECT greatest(least(p.n, p.lim - (SELECT coalesce(sum(c), 0) FROM live)), 0)::int AS g FROM p
	), merged AS (
		SELECT s, sum(c)::int AS c FROM (
			SELECT s, c FROM live
			UNION ALL
			SELECT p.target, g FROM lease, p
		) AS b WHERE c > 0 GROUP BY s
	)
	SELECT coalesce((SELECT array_agg(s ORDER BY s) FROM merged), '{}'),
		coalesce((SELECT array_agg(c ORDER BY s) FROM merged), '{}'),
		g > 0, g, p.now
	FROM lease, p)
RETURNING key, granted, secs, counts`

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
		SELECT s, c - CASE WHEN s = $7::bigint THEN least($8::int, c) WHEN s = $9::bigint THEN least($10::int, c) ELSE 0 END AS c
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
RETURNING granted, secs, counts`

// Allow spends one request of key at now and reports whether it stays
// within limit requests in the sliding minute. Reset is when the oldest
// counted second leaves the window, the next instant Remaining grows (and
// when a refused request may retry). Remaining is what the database had
// left after this process's last lease of the key, at the request's
// second, plus what is left of this process's slices: exact for a lone
// process, and low by other processes' unused slices otherwise.
//
// A request waits for a lease of its key already on its way rather than
// sending another; it gives up with ctx. A key served in the second
// before (a busy key) has its next second's slice leased ahead, in the
// background, so its requests find a slice ready when their second
// begins and do not wait for the database at all.
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
		if k.take() {
			d := k.decision(true, sec)
			l.ahead(key, k, sec, now)
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
		if wait == l.gatherDone {
			l.hurryAhead() // the key's lease ahead, still gathering
		}
		k.waiting++
		l.waits.Add(1)
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
	granted, err := l.lease(ctx, key, k, limit, now, sec, sec, n)
	if err != nil {
		l.mu.Unlock()
		return ports.RateDecision{}, err
	}
	if granted == 0 && k.nextLeft > 0 && k.sec == sec && k.limit == limit {
		// The window is full, but part of it is this process's slice of
		// the next second, unused: hand it back and lease again, so the
		// key is refused only when its budget is really spent.
		k.handBack(k.nextSec, k.nextLeft)
		k.nextSec, k.nextLeft = 0, 0
		if granted, err = l.lease(ctx, key, k, limit, now, sec, sec, n); err != nil {
			l.mu.Unlock()
			return ports.RateDecision{}, err
		}
	}
	if k.sec != sec || k.limit != limit {
		// A request of a later second (or another limit) rolled the key
		// while this lease was out: this request is served from the slice
		// (its second's), the rest goes back with the next lease.
		k.handBack(sec, granted-1)
		d := k.decisionAt(granted > 0, limit, sec, max(granted-1, 0))
		l.mu.Unlock()
		l.maybePrune(ctx, now)
		return d, nil
	}
	if granted == 0 {
		k.refused = true
		d := k.decision(false, sec)
		l.mu.Unlock()
		return d, nil
	}
	k.left += granted - 1
	k.used++
	d := k.decision(true, sec)
	l.ahead(key, k, sec, now)
	l.mu.Unlock()
	l.maybePrune(ctx, now)
	return d, nil
}

// lease sends one lease statement for key: up to n requests charged to
// second target's bucket, the window's live buckets being those of second
// floor-60 on (floor is the current second: a lease ahead counts every
// bucket the current second still counts, so no window holds more than
// the limit). It is called and returns with l.mu held, and releases it
// while the statement is out; k.inflight is open meanwhile. The key's
// buckets as the statement left them become the key's snapshot.
func (l *RateLimiter) lease(ctx context.Context, key string, k *keySlice, limit int, now time.Time, floor, target int64, n int) (int, error) {
	ret := k.ret
	k.ret = [2]rateReturn{} // a failed lease may have handed them back: never twice
	k.out = ret
	done := make(chan struct{})
	k.inflight = done
	l.mu.Unlock()

	l.leases.Add(1)
	l.statements.Add(1)
	l.waits.Add(1)
	var (
		granted int
		secs    []int64
		counts  []int32
	)
	err := l.db.Pool.QueryRow(ctx, leaseSQL, key, now.UTC(), limit, target, floor-ports.RateWindowSeconds, n, ret[0].sec, ret[0].n, ret[1].sec, ret[1].n).
		Scan(&granted, &secs, &counts)

	l.mu.Lock()
	k.inflight = nil
	k.out = [2]rateReturn{}
	close(done)
	if err != nil {
		return 0, fmt.Errorf("postgres: rate limit %q: %w", key, err)
	}
	k.secs, k.counts = secs, counts
	return granted, nil
}

// ahead leases, in the background, the next second's slice of a busy key
// (one served in the second before sec), unless a lease of the key is out
// or the slice is already held. The slice is charged to second sec+1's
// bucket, and becomes the current slice when that second begins. Its size
// is twice what the process used of the key in the last second or this one
// so far, plus two (at most sliceCap): a key's requests in a second vary
// (a load balancer's share of a key is a few requests a second), and a
// second that brings more than its slice holds sends a lease on a
// request's path; what the slice does not serve goes back with the next
// lease, in the same statement. Sized by the last second alone, 0.39
// leases a request with two processes, 0.59 with three; with the margin
// 0.30 and 0.50 (TestRateLimiterLeasesAcrossProcesses), and the
// undershoot bound is unchanged (a slice is at most sliceCap).
// Called with l.mu held.
func (l *RateLimiter) ahead(key string, k *keySlice, sec int64, now time.Time) {
	if l.gathering && now.Sub(l.gatherFrom) >= aheadGather {
		l.hurryAhead()
	}
	if k.prevUsed == 0 || k.inflight != nil || k.refused || k.nextSec == sec+1 {
		return
	}
	if !l.gathering {
		l.gathering, l.gatherFrom, l.gatherDone = true, now, make(chan struct{})
		l.aheads.Add(1)
		go l.sendAhead()
	}
	n := min(2*max(k.prevUsed, k.used)+2, sliceCap(k.limit))
	k.nextSec, k.nextLeft = sec+1, 0
	k.inflight = l.gatherDone
	l.pending = append(l.pending, aheadLease{key: key, k: k, sec: sec, limit: k.limit, n: n, now: now})
}

// hurryAhead has the leases ahead gathering sent now. Called with l.mu
// held, while they gather.
func (l *RateLimiter) hurryAhead() {
	select {
	case l.hurry <- struct{}{}:
	default: // already hurried
	}
}

// aheadGather is how long the leases ahead asked for gather before they
// are sent together (leaseAheadSQL). A busy key asks once a second in
// every process serving it, at its first request of the second: 320 keys
// over three processes sent 960 statements a second, one row each, a cost
// per key and process that grew with the processes (test/load/processes.sh,
// docs/scaling.md). Gathered, they are at most 1/aheadGather statements a
// second per process (aheadBatchMax keys each). A request that finds its
// slice empty while its key's lease ahead gathers hurries it and waits for
// it, as for any lease on its way.
const aheadGather = 40 * time.Millisecond

// aheadBatchMax caps the keys of one lease-ahead statement: each row finds
// its parameters by its key's position in the statement's arrays (a linear
// search), so a statement's work grows with the square of its keys.
const aheadBatchMax = 200

// sendAhead sends, after aheadGather (or when hurried), the leases ahead
// asked for meanwhile, aheadBatchMax keys a statement. A lease overtaken
// by its key's requests (a second after its own began, or another limit)
// is dropped: the request path leases as it needs.
func (l *RateLimiter) sendAhead() {
	defer l.aheads.Done()
	select {
	case <-time.After(aheadGather):
	case <-l.hurry:
	}
	ctx, cancel := context.WithTimeout(context.Background(), aheadTimeout)
	defer cancel()
	l.mu.Lock()
	asked, done := l.pending, l.gatherDone
	l.pending, l.gatherDone, l.gathering = nil, nil, false
	select { // a hurry that came after the timer is not for the next gathering
	case <-l.hurry:
	default:
	}
	var batch []aheadLease
	for _, a := range asked {
		k := a.k
		if k.limit != a.limit || k.sec > a.sec+1 {
			k.inflight = nil
			if k.nextSec == a.sec+1 && k.nextLeft == 0 {
				k.nextSec = 0
			}
			continue
		}
		a.ret, k.out = k.ret, k.ret // a failed lease may have handed them back: never twice
		k.ret = [2]rateReturn{}
		batch = append(batch, a)
	}
	l.mu.Unlock()

	type leased struct {
		granted int
		secs    []int64
		counts  []int32
	}
	got := make(map[string]leased, len(batch))
	for from := 0; from < len(batch); from += aheadBatchMax {
		chunk := batch[from:min(from+aheadBatchMax, len(batch))]
		rows := make(map[string]leased, len(chunk))
		if err := l.sendAheadChunk(ctx, chunk, func(key string, granted int, secs []int64, counts []int32) {
			rows[key] = leased{granted, secs, counts}
		}); err != nil {
			// Nothing of a failed statement is granted, whatever rows
			// came first: its transaction rolled back, or, failed after
			// its commit, its grants stay charged unused until they
			// leave the window (the hand-backs it carried are not sent
			// again). It and the rest meet the fault on the request path
			// (TestRateLimiterFailedLeaseAheadGrantsNothing).
			break
		}
		maps.Copy(got, rows)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range batch {
		k, sec := a.k, a.sec
		k.inflight = nil
		k.out = [2]rateReturn{}
		g, ok := got[a.key]
		if !ok {
			// The request path leases as it needs, and meets the fault.
			if k.nextSec == sec+1 {
				k.nextSec, k.nextLeft = 0, 0
			}
			continue
		}
		k.secs, k.counts = g.secs, g.counts
		switch {
		case k.limit != a.limit || k.sec > sec+1:
			k.handBack(sec+1, g.granted)
		case k.sec == sec+1:
			// The second began while the lease was out (roll found no
			// slice to take over): the slice is the current one.
			k.left += g.granted
		case k.nextSec == sec+1:
			k.nextLeft += g.granted
		default:
			k.handBack(sec+1, g.granted)
		}
	}
	close(done)
}

// sendAheadChunk sends one statement of leases ahead (leaseAheadSQL) and
// hands each key's result to got.
func (l *RateLimiter) sendAheadChunk(ctx context.Context, chunk []aheadLease, got func(key string, granted int, secs []int64, counts []int32)) error {
	var (
		keys                        = make([]string, len(chunk))
		nows                        = make([]time.Time, len(chunk))
		limits, ns, ret0n, ret1n    = make([]int, len(chunk)), make([]int, len(chunk)), make([]int, len(chunk)), make([]int, len(chunk))
		targets, oldest, ret0, ret1 = make([]int64, len(chunk)), make([]int64, len(chunk)), make([]int64, len(chunk)), make([]int64, len(chunk))
	)
	for i, a := range chunk {
		keys[i], nows[i], limits[i], ns[i] = a.key, a.now.UTC(), a.limit, a.n
		targets[i], oldest[i] = a.sec+1, a.sec-ports.RateWindowSeconds
		ret0[i], ret0n[i], ret1[i], ret1n[i] = a.ret[0].sec, a.ret[0].n, a.ret[1].sec, a.ret[1].n
	}
	l.leases.Add(int64(len(chunk)))
	l.statements.Add(1)
	rows, err := l.db.Pool.Query(ctx, leaseAheadSQL, keys, nows, limits, targets, oldest, ns, ret0, ret0n, ret1, ret1n)
	if err != nil {
		return fmt.Errorf("postgres: rate limit leases ahead: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key     string
			granted int
			secs    []int64
			counts  []int32
		)
		if err := rows.Scan(&key, &granted, &secs, &counts); err != nil {
			return fmt.Errorf("postgres: rate limit leases ahead: %w", err)
		}
		got(key, granted, secs, counts)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: rate limit leases ahead: %w", err)
	}
	return nil
}

// aheadTimeout bounds a lease ahead: it serves a second that begins within
// one, so a slower one is of no use.
const aheadTimeout = 2 * time.Second

// take serves one request from the current second's slice and reports
// whether it could. (Never from the slice leased ahead: a request counts
// in its own second's bucket, so a lone process decides exactly as the
// memory limiter.)
func (k *keySlice) take() bool {
	if k.left == 0 {
		return false
	}
	k.left--
	k.used++
	return true
}

// roll moves the key to second sec under limit: a slice of an earlier
// second (or another limit) ends, and what it did not serve is handed back
// by the next lease; a slice leased ahead for sec becomes the current one.
func (k *keySlice) roll(sec int64, limit int) {
	if k.sec == sec && k.limit == limit {
		return
	}
	k.handBack(k.sec, k.left)
	k.left = 0
	if k.nextLeft > 0 && (k.nextSec < sec || k.limit != limit) {
		k.handBack(k.nextSec, k.nextLeft)
		k.nextLeft = 0
	}
	if k.nextSec == sec && k.limit == limit {
		k.left, k.nextLeft = k.nextLeft, 0
	}
	if k.nextSec <= sec && k.nextLeft == 0 {
		k.nextSec = 0
	}
	if k.sec == sec-1 {
		k.prevUsed = k.used
	} else if k.sec != sec {
		k.prevUsed = 0
	}
	if k.sec != sec {
		k.used = 0
	}
	k.sec, k.limit, k.refused = sec, limit, false
}

// handBack keeps n unused tokens of the slice of second sec for the next
// lease to give back. One second's tokens are kept at a time: should two
// seconds' be pending (a lease overtaken by a later second), the older are
// left charged, which only holds back budget until they leave the window.
func (k *keySlice) handBack(sec int64, n int) {
	if n <= 0 {
		return
	}
	for i := range k.ret {
		if k.ret[i].n > 0 && k.ret[i].sec == sec {
			k.ret[i].n += n
			return
		}
	}
	i := 0
	if k.ret[1].n == 0 || k.ret[1].sec < k.ret[0].sec {
		i = 1
	}
	if k.ret[0].n == 0 {
		i = 0
	}
	if k.ret[i].n == 0 || k.ret[i].sec < sec {
		k.ret[i] = rateReturn{sec: sec, n: n}
	}
}

// liveCount is the key's count at second sec in the snapshot of its last
// lease: the buckets still in the window then (those of a later second,
// leased ahead, included).
func (k *keySlice) liveCount(sec int64) int {
	n := 0
	for i, s := range k.secs {
		if s >= sec-ports.RateWindowSeconds && i < len(k.counts) {
			n += int(k.counts[i])
		}
	}
	return n
}

// decision is the answer at second sec from what the last lease saw, this
// process's unused slices deducted from the count.
func (k *keySlice) decision(allowed bool, sec int64) ports.RateDecision {
	unused := k.left + k.nextLeft
	// Tokens waiting to be handed back, or on their way back, are still
	// counted in the snapshot though no request spent them.
	for _, rs := range [2]*[2]rateReturn{&k.ret, &k.out} {
		for _, r := range rs {
			if r.n > 0 && r.sec >= sec-ports.RateWindowSeconds {
				unused += r.n
			}
		}
	}
	return k.decisionAt(allowed, k.limit, sec, unused)
}

// decisionAt is the answer at second sec under limit from what the last
// lease saw, unused requests held by this process deducted from the count.
func (k *keySlice) decisionAt(allowed bool, limit int, sec int64, unused int) ports.RateDecision {
	var oldest *int64
	for i, s := range k.secs {
		if s >= sec-ports.RateWindowSeconds && i < len(k.counts) && k.counts[i] > 0 {
			oldest = &k.secs[i]
			break
		}
	}
	return ports.RateDecisionOf(allowed, limit, k.liveCount(sec)-unused, oldest, sec)
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
