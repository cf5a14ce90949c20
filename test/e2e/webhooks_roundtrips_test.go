package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/test/apptest"
)

// webhookTrips counts, through its tracer, the round trips of webhook
// deliveries: every statement, batch or prepare that writes or reads
// webhook_deliveries or webhook_endpoints, or inserts River jobs. The
// event's own insert (which reads the subscribed endpoints in its
// statement, with or without webhooks) and River's polling are left out.
type webhookTrips struct {
	mu    sync.Mutex
	trips []string
}

func (w *webhookTrips) add(kind, sql string, args []any) {
	low := strings.ToLower(strings.Join(strings.Fields(sql), " "))
	if strings.Contains(low, "insert into events") {
		return
	}
	insertsJobs := strings.Contains(low, "insert into") && strings.Contains(low, "river_job")
	if insertsJobs && !strings.Contains(fmt.Sprint(args...), webhooks.JobDeliver) {
		return // River's own inserts (periodic jobs enqueued on start)
	}
	if !insertsJobs && !strings.Contains(low, "webhook_deliveries") && !strings.Contains(low, "webhook_endpoints") {
		return
	}
	w.mu.Lock()
	w.trips = append(w.trips, kind+" "+low)
	w.mu.Unlock()
}

// tracer is the pgx tracer that feeds w.
func (w *webhookTrips) tracer() tripTracer {
	return tripTracer{record: func(_ *pgx.Conn, kind, sql string, args []any) { w.add(kind, sql, args) }}
}

func (w *webhookTrips) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.trips
	w.trips = nil
	return out
}

// TestWebhookRoundTrips holds webhook deliveries to their budget of round
// trips to PostgreSQL (issue 16 item 5): an event fanned out to ten
// endpoints inserts its deliveries and their jobs in two round trips in
// all, and a successful attempt reads once and records once. Prepares are
// left out, as in TestRoundTripBudgets: once per connection and text.
func TestWebhookRoundTrips(t *testing.T) {
	tr := &webhookTrips{}
	a := apptest.Postgres(t, whNoLimit, apptest.WithDBTracer(tr.tracer()))
	runs := []string{whRun(t, a), whRun(t, a)}
	const endpoints = 10
	rcs := make([]*whReceiver, endpoints)
	for i := range rcs {
		rcs[i] = newWhReceiver(t, whStatic(http.StatusOK))
		whEndpoint(t, a, rcs[i].URL(), "queue.closed", "queue.opened")
	}
	tr.take()

	const events = 4
	for i := range events {
		whToggle(t, a, runs[i%len(runs)], []string{"close", "open"}[i/len(runs)%2])
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		for _, rc := range rcs {
			n += len(rc.Hits())
		}
		if n >= events*endpoints {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries received in 30 s", n, events*endpoints)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the last attempts' records

	var intake, attempt int
	var listing []string
	for _, s := range tr.take() {
		if strings.HasPrefix(s, "prepare ") {
			continue
		}
		listing = append(listing, s)
		switch {
		case strings.Contains(s, "insert into"):
			intake++
		default:
			attempt++
		}
	}
	deliveries := events * endpoints
	t.Logf("%d events to %d endpoints: %d round trips to fan out, %d for %d attempts", events, endpoints, intake, attempt, deliveries)
	if intake > 2*events {
		t.Errorf("fan-out: %d round trips for %d events, want at most 2 per event (one insert of the deliveries, one of their jobs):\n  %s",
			intake, events, strings.Join(listing, "\n  "))
	}
	if attempt > 2*deliveries {
		t.Errorf("attempts: %d round trips for %d successful deliveries, want at most 2 each (one read, one update):\n  %s",
			attempt, deliveries, strings.Join(listing, "\n  "))
	}
}
