package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/test/apptest"
)

// roundTrips is a pgx tracer that records every statement, batch and
// prepare the process sends to PostgreSQL: each is one round trip (a batch
// or pipeline is one). River's own traffic (its producers poll on their
// own schedule) is left out, so what remains is the request's.
type roundTrips struct {
	mu    sync.Mutex
	trips []string
}

func (r *roundTrips) add(kind, sql string) {
	if strings.Contains(sql, "river_") || strings.Contains(sql, "/* TEMPLATE") {
		return
	}
	r.mu.Lock()
	r.trips = append(r.trips, kind+" "+strings.Join(strings.Fields(sql), " "))
	r.mu.Unlock()
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add("query", d.SQL)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var sqls []string
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
	}
	r.add("batch", strings.Join(sqls, "; "))
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (r *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	r.add("prepare", d.SQL)
	return ctx
}

func (r *roundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// during returns the round trips f caused.
func (r *roundTrips) during(f func()) []string {
	r.mu.Lock()
	r.trips = nil
	r.mu.Unlock()
	f()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.trips...)
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
		t.Logf("%s: %d round trips (budget %d)", route, len(trips), issue)
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
// to PostgreSQL (issue 16), the rate limiter's included: a GET of a turn
// reads in at most two and commits nothing; an intake and each dispatch
// operation are one transaction, build their answer from what the
// transaction returned (nothing after the commit), and stay within the
// ceiling they hold today; the issue's budget of six is logged where it is
// not met yet.
func TestRoundTripBudgets(t *testing.T) {
	tr := &roundTrips{}
	a := apptest.Postgres(t, apptest.WithDBTracer(tr))
	_, _, runID := setupQueue(t, a, nil)

	create := func(i int) string {
		var turn struct{ ID string }
		a.API(http.MethodPost, "/queue-runs/"+runID+"/turns", map[string]any{
			"idempotencyKey": fmt.Sprintf("budget-key-%04d", i)}).Must(http.StatusCreated, &turn)
		return turn.ID
	}
	// Warm up: the first request of each kind fills the process's caches.
	first := create(0)
	second := create(1)
	a.API(http.MethodGet, "/turns/"+first, nil).Must(http.StatusOK, nil)

	var id string
	trips := tr.during(func() { id = create(2) })
	budget(t, "POST /queue-runs/{id}/turns", trips, 6, 8, false)

	trips = tr.during(func() { a.API(http.MethodGet, "/turns/"+second, nil).Must(http.StatusOK, nil) })
	budget(t, "GET /turns/{id} (waiting)", trips, 2, 2, true)

	trips = tr.during(func() { okay(t, a.API(http.MethodPost, "/queue-runs/"+runID+"/dispatch/next", nil)) })
	budget(t, "POST /queue-runs/{id}/dispatch/next", trips, 6, 7, false)

	// The ceilings held today, per operation (the issue's budget is 6).
	for _, op := range []struct {
		name string
		held int
	}{{"start", 6}, {"complete", 7}} {
		trips = tr.during(func() { okay(t, a.API(http.MethodPost, "/turns/"+first+"/"+op.name, nil)) })
		budget(t, "POST /turns/{id}/"+op.name, trips, 6, op.held, false)
	}
	for _, op := range []struct {
		name string
		held int
	}{{"hold", 6}, {"release", 7}, {"call", 7}} {
		trips = tr.during(func() { okay(t, a.API(http.MethodPost, "/turns/"+id+"/"+op.name, nil)) })
		budget(t, "POST /turns/{id}/"+op.name, trips, 6, op.held, false)
	}
	trips = tr.during(func() { a.API(http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, nil) })
	budget(t, "GET /turns/{id} (called)", trips, 2, 2, true)
}

func okay(t *testing.T, r *apptest.Response) {
	t.Helper()
	if r.Status/100 != 2 {
		t.Fatalf("want 2xx, got %d: %s", r.Status, r.Body)
	}
}
