package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
)

// roundTrips records, through its tracer, every statement, batch and
// prepare the process sends to PostgreSQL: each is one round trip (a batch
// or pipeline is one). River's own traffic (its producers poll on their
// own schedule, in transactions of their own) is left out, so what remains
// is the request's.
type roundTrips struct {
	mu    sync.Mutex
	trips []trip
}

// trip is one recorded round trip, with the connection that sent it.
type trip struct {
	conn  *pgx.Conn
	text  string
	river bool
}

func (r *roundTrips) add(conn *pgx.Conn, kind, sql string) {
	if strings.Contains(sql, "/* TEMPLATE") {
		return
	}
	// The announcer's NOTIFY: sent after the commit by a goroutine of its
	// own, on a connection of its own, for every event committed meanwhile
	// (adapters/postgres/announce.go), not by the request.
	if strings.Contains(sql, "pg_notify('qms_events'") {
		return
	}
	// A rate-limit lease ahead: sent by a goroutine of its own during a
	// second for the key's next second (adapters/postgres/ratelimit.go),
	// not on the request's path; a request that would wait for one is
	// counted by the limiter's own tests (TestRateLimiterBusyKeyNeverWaits).
	if strings.Contains(sql, "rate limit lease ahead") {
		return
	}
	river := strings.Contains(sql, "river_") || strings.Contains(sql, "topic_to_notify")
	r.mu.Lock()
	r.trips = append(r.trips, trip{conn: conn, text: kind + " " + strings.Join(strings.Fields(sql), " "), river: river})
	r.mu.Unlock()
}

// requests drops River's statements, and the bare BEGIN, COMMIT and
// ROLLBACK of River's own transactions: those whose neighbour on the same
// connection, in the window, is a River statement or nothing (a unit of
// work of qms sends its BEGIN and COMMIT in batches with its statements,
// and its transaction begins and ends within the request's window).
func requests(all []trip) []string {
	bare := func(t trip) bool {
		switch strings.ToLower(t.text) {
		case "query begin", "query commit", "query rollback":
			return true
		}
		return false
	}
	riverNext := func(i, step int) bool {
		for j := i + step; j >= 0 && j < len(all); j += step {
			if all[j].conn == all[i].conn {
				return all[j].river
			}
		}
		return true
	}
	var out []string
	for i, t := range all {
		if t.river || (bare(t) && (riverNext(i, 1) || riverNext(i, -1))) {
			continue
		}
		out = append(out, t.text)
	}
	return out
}

// tracer is the pgx tracer that feeds r.
func (r *roundTrips) tracer() tripTracer {
	return tripTracer{record: func(conn *pgx.Conn, kind, sql string, _ []any) { r.add(conn, kind, sql) }}
}

// tripTracer is a pgx tracer that hands record every round trip the
// process sends: a statement, a batch (one round trip, whatever it holds:
// its statements joined with "; ", their arguments in order) or a prepare.
type tripTracer struct {
	record func(conn *pgx.Conn, kind, sql string, args []any)
}

// ofJob reports whether ctx is a River job's: a periodic job (the
// retention prune runs when the process starts) sends statements of its
// own, on its own schedule, that a request's window may catch.
func ofJob(ctx context.Context) bool {
	_, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	return err == nil
}

func (t tripTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !ofJob(ctx) {
		t.record(conn, "query", d.SQL, d.Args)
	}
	return ctx
}

func (tripTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t tripTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	if ofJob(ctx) {
		return ctx
	}
	var (
		sqls []string
		args []any
	)
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
		args = append(args, q.Arguments...)
	}
	t.record(conn, "batch", strings.Join(sqls, "; "), args)
	return ctx
}

func (tripTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (tripTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (t tripTracer) TracePrepareStart(ctx context.Context, conn *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	if !ofJob(ctx) {
		t.record(conn, "prepare", d.SQL, nil)
	}
	return ctx
}

func (tripTracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// during returns the round trips f caused.
func (r *roundTrips) during(f func()) []string {
	r.mu.Lock()
	r.trips = nil
	r.mu.Unlock()
	f()
	r.mu.Lock()
	defer r.mu.Unlock()
	return requests(r.trips)
}

// budget fails the test when trips exceed held, the ceiling this code
// holds, or when a read wrote or a write took more than one transaction.
// issue is the budget of issue 16; a route still above it is logged.
//
// Prepares are listed but not counted: the hot statements carry
// parameters and are prepared once per connection and text, then reused
// for the connection's life, so in steady state they cost nothing per
// request; which request pays one depends on which pooled connection it
// draws.
func budget(t *testing.T, route string, all []string, issue, held int, readOnly bool) {
	t.Helper()
	listing := strings.Join(all, "\n  ")
	var trips []string
	for _, s := range all {
		if !strings.HasPrefix(s, "prepare ") {
			trips = append(trips, s)
		}
	}
	switch {
	case len(trips) > held:
		t.Errorf("%s: %d round trips, held at %d (issue 16's budget %d):\n  %s", route, len(trips), held, issue, listing)
	case len(trips) > issue:
		t.Logf("%s: %d round trips; issue 16's budget is %d, not yet met:\n  %s", route, len(trips), issue, listing)
	default:
		t.Logf("%s: %d round trips (budget %d):\n  %s", route, len(trips), issue, listing)
	}
	begins, commits := 0, 0
	for _, s := range trips {
		low := strings.ToLower(s)
		for _, stmt := range statements(low) {
			switch stmt {
			case "begin":
				begins++
			case "commit":
				commits++
			}
		}
		if readOnly && (strings.Contains(low, "insert ") || strings.Contains(low, "update ") || strings.Contains(low, "delete ")) &&
			!strings.Contains(low, "rate_limits") {
			t.Errorf("%s wrote: %s", route, s)
		}
	}
	if readOnly && (begins > 0 || commits > 0) {
		t.Errorf("%s: a read began or committed a transaction:\n  %s", route, listing)
	}
	if !readOnly && (begins != 1 || commits != 1) {
		t.Errorf("%s: %d begins and %d commits, want one transaction:\n  %s", route, begins, commits, listing)
	}
	// Nothing after the commit: the answer is built from what the
	// transaction read and wrote. (BEGIN travels with the first statement
	// and COMMIT with the last writes, in one batch each.)
	if !readOnly && len(trips) > 0 {
		last := statements(strings.ToLower(trips[len(trips)-1]))
		if last[len(last)-1] != "commit" {
			t.Errorf("%s: read again after its commit:\n  %s", route, listing)
		}
	}
}

// intakeStatements counts the statements of trips, prepares, BEGIN and
// COMMIT left out.
func intakeStatements(trips []string) int {
	n := 0
	for _, s := range trips {
		if strings.HasPrefix(s, "prepare ") {
			continue
		}
		for _, stmt := range statements(strings.ToLower(s)) {
			if stmt != "begin" && stmt != "commit" {
				n++
			}
		}
	}
	return n
}

// statements splits a recorded round trip into its statements.
func statements(trip string) []string {
	trip = strings.TrimPrefix(strings.TrimPrefix(trip, "query "), "batch ")
	parts := strings.Split(trip, "; ")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// TestRoundTripBudgets holds each hot route to its budget of round trips
// to PostgreSQL (issues 16 and 30), the rate limiter's included, on a warm
// key: a GET of a turn reads in one and commits nothing; an intake and each
// dispatch operation are one transaction, build their answer from what the
// transaction returned (nothing after the commit), and stay within the
// ceiling they hold today. Each measured request is the first of its
// second (the clock moves a second before it) and finds its slice of the
// key's rate-limit budget leased ahead during the second before, so none
// sends a lease of its own. (The limit is raised so that one key's many
// requests a second stay within a second's share of it: at the spec's 120
// a minute a key is warm at 2 a second.)
func TestRoundTripBudgets(t *testing.T) {
	tr := &roundTrips{}
	clock := platformtest.NewClock(time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC))
	a := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()), apptest.WithClock(clock),
		apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 6000 }))
	_, _, runID := setupQueue(t, a, nil)

	create := func(i int) string {
		var turn struct{ ID string }
		a.API(http.MethodPost, "/queue-runs/"+runID+"/turns", map[string]any{
			"idempotencyKey": fmt.Sprintf("budget-key-%04d", i)}).Must(http.StatusCreated, &turn)
		return turn.ID
	}
	// Warm up: the first request of each kind fills the process's caches,
	// and the key is used in two seconds running, so it is busy.
	first := create(0)
	clock.Advance(time.Second)
	second := create(1)
	a.API(http.MethodGet, "/turns/"+first, nil).Must(http.StatusOK, nil)
	// measure moves the clock to the next second, gives the lease ahead
	// sent during the last request time to land, and records f's trips.
	measure := func(f func()) []string {
		time.Sleep(20 * time.Millisecond)
		clock.Advance(time.Second)
		return tr.during(f)
	}

	var id string
	trips := measure(func() { id = create(2) })
	budget(t, "POST /queue-runs/{id}/turns", trips, 6, 2, false)
	// And its statements, BEGIN and COMMIT aside (issue 30, one row per
	// intake): the run's lock with the account's endpoints, the key's
	// look-up, the draw (which makes the line's next version too), the
	// turn, its event, its line change. The line and endpoints' read and
	// the line's own upsert went with migration 0250.
	if n := intakeStatements(trips); n > 6 {
		t.Errorf("POST /queue-runs/{id}/turns: %d statements, held at 6:\n  %s", n, strings.Join(trips, "\n  "))
	}

	trips = measure(func() { a.API(http.MethodGet, "/turns/"+second, nil).Must(http.StatusOK, nil) })
	budget(t, "GET /turns/{id} (waiting)", trips, 1, 1, true)

	trips = measure(func() { okay(t, a.API(http.MethodPost, "/queue-runs/"+runID+"/dispatch/next", nil)) })
	// 4: the next-turn query may be prepared on a connection of the pool
	// that has not seen it yet (a round trip of its own).
	budget(t, "POST /queue-runs/{id}/dispatch/next", trips, 6, 4, false)

	// The ceilings held today, per operation (the issue's budget is 6).
	for _, op := range []struct {
		name string
		held int
	}{{"start", 3}, {"complete", 5}} {
		trips = measure(func() { okay(t, a.API(http.MethodPost, "/turns/"+first+"/"+op.name, nil)) })
		budget(t, "POST /turns/{id}/"+op.name, trips, 6, op.held, false)
	}
	for _, op := range []struct {
		name string
		held int
	}{{"hold", 4}, {"release", 5}, {"call", 4}} {
		trips = measure(func() { okay(t, a.API(http.MethodPost, "/turns/"+id+"/"+op.name, nil)) })
		budget(t, "POST /turns/{id}/"+op.name, trips, 6, op.held, false)
	}
	trips = measure(func() { a.API(http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, nil) })
	budget(t, "GET /turns/{id} (called)", trips, 1, 1, true)
}

// TestRoundTripsGetSteadyState holds a GET of a turn to one round trip
// once its key is busy: the rate limit leases a slice of the key's budget
// for the second and serves the other requests of that second from it, so
// a key that keeps calling costs one lease a second, not one per request;
// and once the key was busy in the second before, that lease is sent
// ahead, during the second before, off any request's path (issue 30).
// The clock stands still within a second and the test moves it, so the
// count is exact: after a first second of warming up (slices doubling),
// the first GET of the next second leases a slice of 20 (what the key used
// the second before) and the others send their read alone; from the
// second after, every GET sends its read alone, the first included. (Every 2 s
// one GET also reloads the key's authentication, accounts.AuthCacheTTL:
// those reads are not the rate limit's and are left out.)
func TestRoundTripsGetSteadyState(t *testing.T) {
	tr := &roundTrips{}
	clock := platformtest.NewClock(time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC))
	a := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()), apptest.WithClock(clock),
		// Slices of up to 100: 20 a second fit one lease.
		apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 6000 }))
	_, _, runID := setupQueue(t, a, nil)
	var turn struct{ ID string }
	a.API(http.MethodPost, "/queue-runs/"+runID+"/turns", nil).Must(http.StatusCreated, &turn)
	get := func() { a.API(http.MethodGet, "/turns/"+turn.ID, nil).Must(http.StatusOK, nil) }
	for range 20 {
		get()
	}
	for second := range 3 {
		clock.Advance(time.Second)
		for i := range 20 {
			var leases, reads, auth []string
			trips := tr.during(get)
			for _, s := range trips {
				switch {
				case strings.HasPrefix(s, "prepare "):
				case strings.Contains(s, "rate_limits"):
					leases = append(leases, s)
				case strings.Contains(s, "api_keys") || strings.Contains(s, "accounts"):
					auth = append(auth, s)
				default:
					reads = append(reads, s)
				}
			}
			wantLeases := 0
			if second == 0 && i == 0 {
				wantLeases = 1
			}
			if len(leases) != wantLeases || len(reads) != 1 {
				t.Errorf("second %d, GET %d: %d leases and %d reads, want %d and 1:\n  %s",
					second, i, len(leases), len(reads), wantLeases, strings.Join(trips, "\n  "))
			}
			if i == 1 && len(auth) == 0 {
				budget(t, "GET /turns/{id} (a busy key)", trips, 2, 1, true)
			}
		}
	}
}

func okay(t *testing.T, r *apptest.Response) {
	t.Helper()
	if r.Status/100 != 2 {
		t.Fatalf("want 2xx, got %d: %s", r.Status, r.Body)
	}
}
