package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
)

func TestAnalyticsOverHTTP(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		clock := platformtest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
		a := start(t, apptest.WithClock(clock))
		_, qa, runA := setupQueue(t, a, map[string]any{"location": map[string]any{
			"lat": 40.4, "lng": -3.7, "shortAddress": "Sol 1", "timezone": "Europe/Madrid"}})
		_, qb, runB := setupQueue(t, a, nil)
		take := func(run string) string {
			var v struct{ ID string }
			takeTurn(a, run, map[string]any{}).Must(http.StatusCreated, &v)
			return v.ID
		}
		// Queue A: two served (service 60 s and 180 s), one no-show, one
		// cancelled, two waiting. Queue B: one waiting.
		s1, s2, ns, cx := take(runA), take(runA), take(runA), take(runA)
		clock.Advance(10 * time.Minute)
		for _, c := range []struct {
			id      string
			service time.Duration
		}{{s1, time.Minute}, {s2, 3 * time.Minute}} {
			a.API(http.MethodPost, "/turns/"+c.id+"/call", nil).Must(http.StatusCreated, nil)
			a.API(http.MethodPost, "/turns/"+c.id+"/start", nil).Must(http.StatusCreated, nil)
			clock.Advance(c.service)
			a.API(http.MethodPost, "/turns/"+c.id+"/complete", nil).Must(http.StatusCreated, nil)
		}
		a.API(http.MethodPost, "/turns/"+ns+"/call", nil).Must(http.StatusCreated, nil)
		a.API(http.MethodPost, "/turns/"+ns+"/no-show", nil).Must(http.StatusCreated, nil)
		a.API(http.MethodPost, "/turns/"+cx+"/cancel", nil).Must(http.StatusCreated, nil)
		take(runA)
		take(runA)
		take(runB)
		clock.Advance(time.Minute)

		var d struct {
			Queues []struct {
				QueueID, Timezone, Today               string
				Waiting, Called, InService             int
				ServedToday, NoShowsToday              int
				AverageWaitSeconds, LongestWaitSeconds *float64
				AverageServiceSecondsToday             *float64
			}
		}
		a.API(http.MethodGet, "/analytics/dashboard", nil).Must(http.StatusOK, &d)
		if len(d.Queues) != 2 {
			t.Fatalf("dashboard queues: %+v", d.Queues)
		}
		byID := map[string]int{d.Queues[0].QueueID: 0, d.Queues[1].QueueID: 1}
		da, db := d.Queues[byID[qa]], d.Queues[byID[qb]]
		if da.Waiting != 2 || da.ServedToday != 2 || da.NoShowsToday != 1 || da.Timezone != "Europe/Madrid" || da.Today != "2026-06-01" ||
			*da.AverageServiceSecondsToday != 120 || *da.LongestWaitSeconds != 60 {
			t.Fatalf("queue A: %+v", da)
		}
		if db.Waiting != 1 || db.ServedToday != 0 || db.AverageServiceSecondsToday != nil {
			t.Fatalf("queue B: %+v", db)
		}

		var s struct {
			From, To string
			Days     int
			Queues   []struct {
				QueueID                                  string
				TurnsCreated, Served, NoShows, Cancelled int
				Service                                  struct {
					Count      int
					P50Seconds *float64
				}
			}
			Total struct {
				TurnsCreated, Served int
				Wait                 struct{ Count int }
			}
		}
		a.API(http.MethodGet, "/analytics/summary?from=2026-06-01&to=2026-06-01", nil).Must(http.StatusOK, &s)
		if s.Days != 1 || s.Total.TurnsCreated != 7 || s.Total.Served != 2 || s.Total.Wait.Count != 3 {
			t.Fatalf("summary: %+v", s)
		}
		for _, q := range s.Queues {
			if q.QueueID == qa && (q.TurnsCreated != 6 || q.NoShows != 1 || q.Cancelled != 1 || q.Service.Count != 2 || *q.Service.P50Seconds != 120) {
				t.Fatalf("summary of A: %+v", q)
			}
		}
		// The default period ends today.
		a.API(http.MethodGet, "/analytics/summary", nil).Must(http.StatusOK, &s)
		if s.To != "2026-06-01" || s.From != "2026-05-03" || s.Days != 30 || s.Total.TurnsCreated != 7 {
			t.Fatalf("default period: %+v", s)
		}
		for _, q := range []string{"from=2026-06-02&to=2026-06-01", "from=2025-01-01&to=2026-06-01", "from=yesterday", "to="} {
			if r := a.API(http.MethodGet, "/analytics/summary?"+q, nil); r.Status != http.StatusBadRequest || r.ErrorCode() != "VALIDATION_ERROR" {
				t.Errorf("%s: %d %s", q, r.Status, r.Body)
			}
		}
		_, noScope := a.NewAccount("premium", "queues:read")
		if r := a.APIWith(noScope, http.MethodGet, "/analytics/dashboard", nil); r.Status != http.StatusForbidden {
			t.Fatalf("without analytics:read: %d", r.Status)
		}
		// Another account sees only its own (no) queues.
		_, otherKey := a.NewAccount("premium", "analytics:read")
		a.APIWith(otherKey, http.MethodGet, "/analytics/dashboard", nil).Must(http.StatusOK, &d)
		if len(d.Queues) != 0 {
			t.Fatalf("another account's dashboard: %+v", d.Queues)
		}
	})
}
