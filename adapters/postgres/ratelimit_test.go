package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestRateLimiterPrunesIdleKeys(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	now := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	old := postgres.NewRateLimiter(db)
	if _, err := old.Allow(ctx, "idle", 10, now); err != nil {
		t.Fatal(err)
	}
	// A new limiter prunes on its first call: a key used less than a minute
	// ago is kept; its next prune is due a minute later.
	l := postgres.NewRateLimiter(db)
	if _, err := l.Allow(ctx, "busy", 10, now.Add(59*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(ctx, "busy", 10, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var keys []string
	rows, err := db.Pool.Query(ctx, "SELECT key FROM rate_limits ORDER BY key")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "busy" {
		t.Fatalf("keys = %v, want [busy]", keys)
	}
}

// TestRateLimiterLoneProcessIsExact spends a random sequence of requests
// (bursts within a second, pauses, several keys and limits) through one
// leasing limiter and through the memory limiter, which counts every
// request exactly: a lone process hands its unused slices back with its
// next lease, so every decision must be the same, headers included.
func TestRateLimiterLoneProcessIsExact(t *testing.T) {
	ctx := context.Background()
	l := postgres.NewRateLimiter(pgtest.New(t))
	exact := memory.NewRateLimiter()
	rnd := rand.New(rand.NewPCG(16, 2))
	at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	keys := []struct {
		name  string
		limit int
	}{{"small", 5}, {"default", 120}, {"large", 600}}
	for i := range 3000 {
		switch r := rnd.IntN(100); {
		case r < 70: // same second, mostly
			at = at.Add(time.Duration(rnd.IntN(20)) * time.Millisecond)
		case r < 95:
			at = at.Add(time.Duration(rnd.IntN(3000)) * time.Millisecond)
		default:
			at = at.Add(time.Duration(20+rnd.IntN(50)) * time.Second)
		}
		k := keys[rnd.IntN(len(keys))]
		got, err := l.Allow(ctx, k.name, k.limit, at)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := exact.Allow(ctx, k.name, k.limit, at)
		if got != want {
			t.Fatalf("request %d of %s at %s: got %+v, want %+v", i, k.name, at.Format(time.StampMilli), got, want)
		}
	}
	if n := l.LeasesForTest(); n >= 3000 {
		t.Fatalf("%d leases for 3000 requests: nothing served from a slice", n)
	}
	t.Logf("3000 requests, %d leases", l.LeasesForTest())
}

// allowedLog records the instants each limiter let a request through, and
// checks that no 60 s window across them all holds more than the limit.
type allowedLog struct{ at []time.Time }

func (a *allowedLog) allow(t *testing.T, l *postgres.RateLimiter, limit int, at time.Time) bool {
	t.Helper()
	d, err := l.Allow(context.Background(), "shared", limit, at)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed {
		a.at = append(a.at, at)
	}
	return d.Allowed
}

func (a *allowedLog) check(t *testing.T, limit int) {
	t.Helper()
	at := slices.SortedFunc(slices.Values(a.at), time.Time.Compare)
	for i, start := range at {
		end, _ := slices.BinarySearchFunc(at, start.Add(time.Minute), time.Time.Compare)
		if n := end - i; n > limit {
			t.Fatalf("%d requests allowed in the 60 s from %s, limit %d", n, start.Format(time.StampMilli), limit)
		}
	}
}

// TestRateLimiterSliceOnlyWithinItsSecond is the case a slice used after
// its second would break: process a leases a slice of two in second 0 and
// serves one; b spends the rest of the minute's budget in second 0. When
// bucket 0 leaves the window (second 61), b's budget is whole again, so a
// request a served at 1.5 s from its second-0 slice would make 121 in the
// 60 s from 1.5 s. Served right, it is charged in second 1 (and a's unused
// token of second 0 handed back), so b gets one less at 61 s. (a, busy
// since second 0, also tries to lease second 2's slice ahead: the window
// is full, so it gets nothing and holds nothing back.)
func TestRateLimiterSliceOnlyWithinItsSecond(t *testing.T) {
	db := pgtest.New(t)
	a, b := postgres.NewRateLimiter(db), postgres.NewRateLimiter(db)
	const limit = 120 // slices of at most 2
	zero := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	var log allowedLog
	// Three requests of a in second 0: leases of 1, 1, then 2 (a burst
	// doubles), so a holds one unused token of second 0.
	for i := range 3 {
		if !log.allow(t, a, limit, zero.Add(time.Duration(100+i)*time.Millisecond)) {
			t.Fatalf("a's request %d refused", i)
		}
	}
	if a.LeasesForTest() != 3 {
		t.Fatalf("a sent %d leases, want 3 (1, 1, 2)", a.LeasesForTest())
	}
	// b takes what is left of the window: 120 - 4 charged to a.
	for log.allow(t, b, limit, zero.Add(500*time.Millisecond)) {
	}
	if len(log.at) != 3+116 {
		t.Fatalf("b got %d, want 116", len(log.at)-3)
	}
	if !log.allow(t, a, limit, zero.Add(1500*time.Millisecond)) {
		t.Fatal("a's request at 1.5 s refused: its unused token of second 0 was not handed back")
	}
	a.SettleForTest()
	if a.LeasesForTest() != 5 {
		t.Fatalf("a sent %d leases, want 5 (second 1's, and second 2's ahead)", a.LeasesForTest())
	}
	for log.allow(t, b, limit, zero.Add(61*time.Second)) {
	}
	log.check(t, limit)
	if got := len(log.at); got != 120+119 {
		t.Fatalf("%d allowed in all, want 239 (120 in second 0 and 1, 119 at 61 s)", got)
	}
}

// TestRateLimiterProcessesNeverOvershoot spends one key through three
// leasing limiters on one database along one random timeline (bursts,
// pauses, across minutes): no 60 s window may hold more than the limit,
// and the limit must be reached (the processes hold back little).
func TestRateLimiterProcessesNeverOvershoot(t *testing.T) {
	db := pgtest.New(t)
	procs := []*postgres.RateLimiter{postgres.NewRateLimiter(db), postgres.NewRateLimiter(db), postgres.NewRateLimiter(db)}
	const limit = 600 // slices of up to 10
	rnd := rand.New(rand.NewPCG(16, 3))
	at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	var log allowedLog
	refused := 0
	for range 4000 {
		if rnd.IntN(1000) < 5 {
			at = at.Add(time.Duration(rnd.IntN(90_000)) * time.Millisecond)
		} else {
			at = at.Add(time.Duration(rnd.IntN(25)) * time.Millisecond)
		}
		if !log.allow(t, procs[rnd.IntN(len(procs))], limit, at) {
			refused++
		}
	}
	log.check(t, limit)
	if refused == 0 {
		t.Fatal("no request refused: the timeline never reached the limit, so it proves nothing")
	}
	var leases int64
	for _, p := range procs {
		leases += p.LeasesForTest()
	}
	t.Logf("4000 requests: %d allowed, %d refused, %d leases", len(log.at), refused, leases)
}

// TestRateLimiterOneLeaseAtATime sends 50 concurrent requests of one key at
// one instant through one limiter: they must not all go to the database.
// Each lease is at least what the key used so far in its second, so even
// unlucky timing needs no more than 1+log2(50) leases; without one lease
// per key at a time, up to 50 would be sent.
func TestRateLimiterOneLeaseAtATime(t *testing.T) {
	ctx := context.Background()
	l := postgres.NewRateLimiter(pgtest.New(t))
	at := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Go(func() {
			d, err := l.Allow(ctx, "busy", 60_000, at)
			if err == nil && !d.Allowed {
				err = fmt.Errorf("refused: %+v", d)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := l.LeasesForTest(); n > 7 {
		t.Fatalf("%d leases for 50 concurrent requests of one key, want at most 7", n)
	}
}

// TestRateLimiterWaiterGivesUp holds a key's row locked so its lease
// cannot finish: a second request of the key waits for that lease and
// returns with its context instead of waiting forever.
func TestRateLimiterWaiterGivesUp(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	l := postgres.NewRateLimiter(db)
	at := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	if _, err := l.Allow(ctx, "locked", 10, at); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT 1 FROM rate_limits WHERE key = 'locked' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	leased := make(chan error, 1)
	go func() {
		_, err := l.Allow(ctx, "locked", 10, at.Add(time.Second))
		leased <- err
	}()
	for !l.LeasingForTest("locked") {
		runtime.Gosched()
	}
	waiting, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Allow(waiting, "locked", 10, at.Add(time.Second)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a request waiting for a stuck lease: %v, want context.Canceled", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-leased; err != nil {
		t.Fatalf("the lease once the row is free: %v", err)
	}
}

// TestRateLimiterProcessesHoldBackLittle spends one key through one to
// three processes taking turns (a load balancer's round robin) for two
// minutes, steady or in bursts, and compares what they let through with
// the memory limiter's exact count: unused slices are handed back, so the
// processes together must get at least 95 % of it (they get 100 % here).
// Discarding unused tokens instead, which leaves them charged for a
// minute, gave 75, 83, 98 and 63 % in these four cases.
func TestRateLimiterProcessesHoldBackLittle(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name         string
		procs, limit int
		every        time.Duration // 0: 240 requests within 100 ms, every other second
	}{
		{"1 process, 120 a minute, 3 a second", 1, 120, 333 * time.Millisecond},
		{"3 processes, 120 a minute, 10 a second", 3, 120, 100 * time.Millisecond},
		{"2 processes, 6000 a minute, 150 a second", 2, 6000, 6666 * time.Microsecond},
		{"3 processes, 6000 a minute, bursts", 3, 6000, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := pgtest.New(t)
			var procs []*postgres.RateLimiter
			for range c.procs {
				procs = append(procs, postgres.NewRateLimiter(db))
			}
			exact := memory.NewRateLimiter()
			at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
			end := at.Add(2 * time.Minute)
			got, want, i := 0, 0, 0
			for ; at.Before(end); i++ {
				d, err := procs[i%c.procs].Allow(ctx, "shared", c.limit, at)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					got++
				}
				if e, _ := exact.Allow(ctx, "shared", c.limit, at); e.Allowed {
					want++
				}
				switch {
				case c.every > 0:
					at = at.Add(c.every)
				case (i+1)%240 == 0:
					at = at.Truncate(time.Second).Add(2 * time.Second)
				default:
					at = at.Add(400 * time.Microsecond)
				}
			}
			if got > want || got*100 < want*95 {
				t.Fatalf("%d requests: %d allowed, exact %d", i, got, want)
			}
			t.Logf("%d requests: %d allowed, exact %d", i, got, want)
		})
	}
}

// TestRateLimiterProcessesConcurrently spends one key through three
// limiters on one database, 250 concurrent requests each at one instant:
// the row lock serialises their leases, so together they let through at
// most the limit, and at least the limit less what each process's last
// slice may hold unused when its requests run out (slices of this limit
// are at most 10).
func TestRateLimiterProcessesConcurrently(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	const limit, each = 600, 250
	at := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	var (
		wg      sync.WaitGroup
		allowed atomic.Int64
		errs    = make([]error, 3*each)
	)
	for p := range 3 {
		l := postgres.NewRateLimiter(db)
		for i := range each {
			wg.Go(func() {
				d, err := l.Allow(ctx, "shared", limit, at)
				errs[p*each+i] = err
				if d.Allowed {
					allowed.Add(1)
				} else if err == nil && d.Remaining != 0 {
					errs[p*each+i] = fmt.Errorf("refused with %d remaining", d.Remaining)
				}
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := allowed.Load(); n > limit || n < limit-3*9 {
		t.Fatalf("%d allowed through three processes, want %d at most and %d at least", n, limit, limit-3*9)
	}
	t.Logf("%d allowed", allowed.Load())
}

// TestRateLimiterBusyKeyNeverWaits calls one key 20 times a second in one
// process: from its third second on, every request finds its second's slice
// leased ahead (in the background, during the second before) and none
// waits for the database; one lease a second is still sent.
func TestRateLimiterBusyKeyNeverWaits(t *testing.T) {
	ctx := context.Background()
	l := postgres.NewRateLimiter(pgtest.New(t))
	zero := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for sec := range 10 {
		if sec == 2 {
			l.SettleForTest()
			if w := l.WaitsForTest(); w == 0 {
				t.Fatal("no request waited in the first two seconds: the count proves nothing")
			}
		}
		waits, leases := l.WaitsForTest(), l.LeasesForTest()
		for i := range 20 {
			at := zero.Add(time.Duration(sec)*time.Second + time.Duration(i)*40*time.Millisecond)
			d, err := l.Allow(ctx, "busy", 6000, at)
			if err != nil || !d.Allowed {
				t.Fatalf("second %d, request %d: %+v, %v", sec, i, d, err)
			}
			if want := 6000 - (sec*20 + i + 1); d.Remaining != want {
				t.Fatalf("second %d, request %d: Remaining %d, want %d", sec, i, d.Remaining, want)
			}
		}
		l.SettleForTest()
		if sec < 2 {
			continue
		}
		if w := l.WaitsForTest() - waits; w != 0 {
			t.Fatalf("second %d: %d requests waited for the database, want none", sec, w)
		}
		if n := l.LeasesForTest() - leases; n != 1 {
			t.Fatalf("second %d: %d leases, want 1 (the next second's, ahead)", sec, n)
		}
	}
}

// TestRateLimiterAheadAcrossProcesses spends one key through three
// processes in turn, each calling it every 50 ms for 75 s (60 requests a
// second in all against 600 a minute, so the budget runs out and refills):
// with slices leased ahead, no 60 s holds more than the limit, Remaining
// is within what the other processes hold of what is left, a refused
// request's Reset is ahead of it, and the three reach the limit less at most what they
// hold back (a slice each of the current second and of the next).
func TestRateLimiterAheadAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	procs := []*postgres.RateLimiter{postgres.NewRateLimiter(db), postgres.NewRateLimiter(db), postgres.NewRateLimiter(db)}
	const limit = 600 // slices of up to 10
	zero := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	var log allowedLog
	inWindow := func(sec int64) int { // allowed requests the window of second sec counts
		n := 0
		for _, at := range log.at {
			if s := at.Unix(); s >= sec-60 && s <= sec {
				n++
			}
		}
		return n
	}
	refused := 0
	for step := range 75 * 20 {
		at := zero.Add(time.Duration(step) * 50 * time.Millisecond)
		if step%20 == 0 {
			for _, p := range procs {
				p.SettleForTest()
			}
		}
		d, err := procs[step%3].Allow(ctx, "shared", limit, at)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			log.at = append(log.at, at)
		} else {
			refused++
			if d.Reset.Unix() <= at.Unix() {
				t.Fatalf("refused at %s with a Reset not after it: %+v", at.Format(time.StampMilli), d)
			}
		}
		// Remaining is this process's view as of its last lease: off by
		// at most what the two others leased since (each leases at most a
		// current and an ahead slice a second, and this process leases
		// every second) or hold unused.
		if truth := max(limit-inWindow(at.Unix()), 0); d.Remaining > truth+2*2*10 || d.Remaining < truth-2*2*10 {
			t.Fatalf("at %s: Remaining %d, but %d left", at.Format(time.StampMilli), d.Remaining, truth)
		}
	}
	log.check(t, limit)
	if refused == 0 {
		t.Fatal("no request refused: the budget never ran out, so the test proves nothing")
	}
	// In the first 60 s the key gets its whole limit, less what the three
	// processes hold unused: two slices of 10 each.
	first := 0
	for _, at := range log.at {
		if at.Before(zero.Add(time.Minute)) {
			first++
		}
	}
	if first < limit-3*2*10 {
		t.Fatalf("%d allowed in the first minute, want at least %d", first, limit-3*2*10)
	}
	t.Logf("%d allowed in the first minute, %d in all, %d refused", first, len(log.at), refused)
}

// TestRateLimiterLeasesAcrossProcesses counts the lease statements a
// request costs when the same keys are served by one, two and three
// processes (a load balancer in front of them: each process sees every key,
// at a third of the rate), with request counts per key and second drawn
// from a Poisson distribution (seeded), as test/load/processes.sh sends
// them: 320 keys at about 7 requests a second each in all. A busy key's
// slice is leased ahead once a second in each process serving it; what the
// count must stay under is a lease ahead per key, process and second plus a
// few leases on the requests' path, when a second brings more requests
// than the slice ahead holds, or when a key had none the second before.
func TestRateLimiterLeasesAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	const keys, seconds, perSecond = 32, 12, 7.0
	for procs := 1; procs <= 3; procs++ {
		db := pgtest.New(t)
		var ls []*postgres.RateLimiter
		for range procs {
			ls = append(ls, postgres.NewRateLimiter(db))
		}
		rng := rand.New(rand.NewPCG(30, uint64(procs)))
		zero := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
		requests, leasesFrom, statementsFrom := 0, int64(0), int64(0)
		for sec := range seconds {
			if sec == 2 { // the steady state: from the third second on
				for _, l := range ls {
					l.SettleForTest()
					leasesFrom += l.LeasesForTest()
					statementsFrom += l.LeaseStatementsForTest()
				}
			}
			for p, l := range ls {
				type call struct {
					at  time.Time
					key string
				}
				var calls []call // the process's requests of the second, in time order
				for k := range keys {
					for range poisson(rng, perSecond/float64(procs)) {
						at := zero.Add(time.Duration(sec)*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
						calls = append(calls, call{at, fmt.Sprintf("key-%d", k)})
					}
				}
				slices.SortStableFunc(calls, func(a, b call) int { return a.at.Compare(b.at) })
				for _, c := range calls {
					if d, err := l.Allow(ctx, c.key, 1_000_000_000, c.at); err != nil || !d.Allowed {
						t.Fatalf("process %d, second %d: %+v, %v", p, sec, d, err)
					}
					if sec >= 2 {
						requests++
					}
				}
				l.SettleForTest()
			}
		}
		leases, statements := -leasesFrom, -statementsFrom
		for _, l := range ls {
			leases += l.LeasesForTest()
			statements += l.LeaseStatementsForTest()
		}
		perKeySecond := float64(leases) / float64(keys*procs*(seconds-2))
		t.Logf("%d process(es): %d requests, %d leases (%.3f a request, %.2f a key, process and second) in %d statements (%.3f a request)",
			procs, requests, leases, float64(leases)/float64(requests), perKeySecond, statements, float64(statements)/float64(requests))
		// What the sizing and the gathering promise: about one lease per
		// key, process and second (a slice sized by the last second alone
		// needed 1.38 with three processes), and leases ahead sharing
		// statements (one statement per lease before they were gathered).
		if perKeySecond > 1.3 {
			t.Errorf("%d process(es): %.2f leases a key, process and second, want at most 1.3", procs, perKeySecond)
		}
		if statements*2 > leases {
			t.Errorf("%d process(es): %d leases in %d statements, want at most half as many statements", procs, leases, statements)
		}
	}
}

// poisson draws from a Poisson distribution of mean m (Knuth's method).
func poisson(rng *rand.Rand, m float64) int {
	l, k, p := math.Exp(-m), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// TestRateLimiterLeasesAheadGathered calls 450 keys once a second in one
// process: from the third second each key's slice was leased ahead, none
// of its requests waits for the database, and the 450 leases ahead of a
// second went in a few statements (at most aheadBatchMax keys each, so at
// least three), not 450.
func TestRateLimiterLeasesAheadGathered(t *testing.T) {
	ctx := context.Background()
	l := postgres.NewRateLimiter(pgtest.New(t))
	const keys = 450
	zero := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for sec := range 4 {
		waits, leases, statements := l.WaitsForTest(), l.LeasesForTest(), l.LeaseStatementsForTest()
		for k := range keys {
			at := zero.Add(time.Duration(sec)*time.Second + time.Duration(k)*time.Millisecond)
			if d, err := l.Allow(ctx, fmt.Sprintf("key-%d", k), 6000, at); err != nil || !d.Allowed {
				t.Fatalf("second %d, key %d: %+v, %v", sec, k, d, err)
			}
		}
		l.SettleForTest()
		if sec < 2 {
			continue
		}
		if w := l.WaitsForTest() - waits; w != 0 {
			t.Fatalf("second %d: %d requests waited for the database, want none", sec, w)
		}
		n, s := l.LeasesForTest()-leases, l.LeaseStatementsForTest()-statements
		if n != keys || s < 3 || s >= keys/10 {
			t.Fatalf("second %d: %d leases in %d statements, want %d in a few (three or more)", sec, n, s, keys)
		}
		t.Logf("second %d: %d leases ahead in %d statements", sec, n, s)
	}
}
