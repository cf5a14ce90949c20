package e2e

import (
	"net/http"
	"strings"
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

// TestAnalyticsAtTheCalendarsEnds: dates whose local days fall outside the
// years 1-9999 in some zone are 400 VALIDATION_ERROR (rule range) naming
// the parameter, never a 500, in both modes; the first and last dates that
// are allowed answer 200 for queues at UTC+14 and UTC-12 (the widest
// offsets), on PostgreSQL too. Before issue 23: from=9999-12-31 was a 500
// in both modes (the period ended in year 10000), to=0001-01-01 a 500 on
// PostgreSQL (SQLSTATE 22008).
func TestAnalyticsAtTheCalendarsEnds(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		for _, zone := range []string{"Pacific/Kiritimati", "Etc/GMT+12"} {
			setupQueue(t, a, map[string]any{"location": map[string]any{"lat": 1.9, "lng": -157.4, "shortAddress": "Edge", "timezone": zone}})
		}
		for query, field := range map[string]string{
			"from=9999-12-31&to=9999-12-31": "from",
			"to=9999-12-31":                 "to",
			"from=0001-01-01&to=0001-01-05": "from",
			"to=0001-01-01":                 "to",
			"from=0001-01-01":               "from",
		} {
			r := a.API(http.MethodGet, "/analytics/summary?"+query, nil)
			if r.Status != http.StatusBadRequest || r.ErrorCode() != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), `"path":"`+field+`","rule":"range"`) {
				t.Errorf("%s: want 400 on %s (range), got %d %s", query, field, r.Status, r.Body)
			}
		}
		for _, query := range []string{"from=9999-12-30&to=9999-12-30", "from=9999-01-01&to=9999-12-30", "from=0001-01-02&to=0001-01-02", "to=0001-01-05"} {
			var s struct {
				From, To string
				Days     int
				Queues   []struct{ PeriodStart, PeriodEnd time.Time }
			}
			a.API(http.MethodGet, "/analytics/summary?"+query, nil).Must(http.StatusOK, &s)
			if len(s.Queues) != 2 || s.Days < 1 {
				t.Errorf("%s: %+v", query, s)
			}
		}
	})
}

// TestAnalyticsEmptyPeriodIsNotBackwards: from=<UTC today> alone, for a
// queue at UTC-12 still on yesterday, names the day asked (to = from, days
// 1, never to before from) and the queue's periodStart equals its
// periodEnd: it counted nothing. Before issue 23 it read from 2026-11-26,
// to 2026-11-25, days 1.
func TestAnalyticsEmptyPeriodIsNotBackwards(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		clock := platformtest.NewClock(time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)) // 25 Nov at UTC-12
		a := start(t, apptest.WithClock(clock))
		setupQueue(t, a, map[string]any{"location": map[string]any{"lat": 0, "lng": -179, "shortAddress": "Baker", "timezone": "Etc/GMT+12"}})
		var s struct {
			From, To string
			Days     int
			Queues   []struct{ PeriodStart, PeriodEnd time.Time }
		}
		a.API(http.MethodGet, "/analytics/summary?from=2026-11-26", nil).Must(http.StatusOK, &s)
		if s.From != "2026-11-26" || s.To != "2026-11-26" || s.Days != 1 || len(s.Queues) != 1 || !s.Queues[0].PeriodStart.Equal(s.Queues[0].PeriodEnd) {
			t.Fatalf("empty period: %+v", s)
		}
		// The queue's today is a day of one.
		a.API(http.MethodGet, "/analytics/summary?from=2026-11-25", nil).Must(http.StatusOK, &s)
		if s.From != "2026-11-25" || s.To != "2026-11-25" || s.Days != 1 {
			t.Fatalf("one day: %+v", s)
		}
	})
}

// TestSlotsAtTheCalendarsEnd: generating slots for 9999-12-31 in a zone
// west of UTC would make instants of year 10000, which no answer can
// carry: 400 on date (rule range), not the 500 it was (issue 23); the day
// before is made, in both modes.
func TestSlotsAtTheCalendarsEnd(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		_, _, run := setupQueue(t, a, map[string]any{"type": "APPOINTMENT", "location": map[string]any{
			"lat": 0, "lng": -179, "shortAddress": "Baker", "timezone": "Etc/GMT+12"}})
		body := func(date string) map[string]any {
			return map[string]any{"date": date, "startTime": "23:00", "endTime": "23:30", "slotMinutes": 30, "capacity": 1}
		}
		r := a.API(http.MethodPost, "/queue-runs/"+run+"/slots", body("9999-12-31"))
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"path":"date","rule":"range"`) {
			t.Fatalf("9999-12-31: %d %s", r.Status, r.Body)
		}
		a.API(http.MethodPost, "/queue-runs/"+run+"/slots", body("9999-12-30")).Must(http.StatusCreated, nil)
	})
}

// TestAccessCodeExpiryAtTheCalendarsEnd: an expiresAt whose UTC instant
// leaves the years 1-9999 is 400 on expiresAt (rule range), not the 500 it
// was (it was stored, then could not be answered), in both modes.
func TestAccessCodeExpiryAtTheCalendarsEnd(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		for i, at := range []string{"9999-12-31T23:00:00-05:00", "0001-01-01T00:30:00+01:00"} {
			r := a.API(http.MethodPost, "/access-codes", map[string]any{"code": "EDGE-" + string(rune('A'+i)), "expiresAt": at})
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"path":"expiresAt","rule":"range"`) {
				t.Fatalf("expiresAt %s: %d %s", at, r.Status, r.Body)
			}
		}
		a.API(http.MethodPost, "/access-codes", map[string]any{"code": "EDGE-OK", "expiresAt": "9999-12-31T23:00:00Z"}).Must(http.StatusCreated, nil)
	})
}
