package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
)

// aptEpoch is where the appointment scenarios start: Saturday 2026-03-07,
// 12:00 UTC (07:00 in New York, the day before its clocks spring forward).
var aptEpoch = time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)

// aptWorld is one process with a fake clock, a branch and helpers.
type aptWorld struct {
	t      *testing.T
	app    *apptest.App
	clock  *platformtest.Clock
	entity string
}

func aptStart(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) *aptWorld {
	t.Helper()
	clock := platformtest.NewClock(aptEpoch)
	// The clock stands still, so every request falls in one rate-limit
	// window: lift the limit out of the way.
	app := start(t, apptest.WithClock(clock), apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 1000000 }))
	w := &aptWorld{t: t, app: app, clock: clock}
	var e client.Entity
	w.call(http.MethodPost, "/entities", map[string]any{"name": "Downtown clinic"}).Must(http.StatusCreated, &e)
	w.entity = e.ID
	return w
}

// with returns the world for a subtest, so its failures stop the subtest.
func (w *aptWorld) with(t *testing.T) *aptWorld {
	c := *w
	c.t = t
	return &c
}

// call sends an API request with the world's key; TestMain's
// openapitest.Install checks every exchange against the OpenAPI document.
func (w *aptWorld) call(method, path string, body any) *apptest.Response {
	w.t.Helper()
	return w.callWith(w.app.Key, method, path, body)
}

func (w *aptWorld) callWith(key, method, path string, body any) *apptest.Response {
	w.t.Helper()
	return w.app.APIWith(key, method, path, body)
}

// refused checks an error answer: status, code, and returns details.
func (w *aptWorld) refused(resp *apptest.Response, status int, code string) map[string]any {
	w.t.Helper()
	if resp.Status != status || resp.ErrorCode() != code {
		w.t.Fatalf("want %d %s, got %d: %s", status, code, resp.Status, resp.Body)
	}
	var env struct {
		Error struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	resp.Decode(&env)
	return env.Error.Details
}

func (w *aptWorld) queue(typ string, extra map[string]any) (queueID, runID string) {
	w.t.Helper()
	body := map[string]any{"entityId": w.entity, "name": "Vaccination", "type": typ}
	for k, v := range extra {
		body[k] = v
	}
	var q client.QueueView
	w.call(http.MethodPost, "/queues", body).Must(http.StatusCreated, &q)
	return q.ID, q.Runs[0].ID
}

func (w *aptWorld) generate(runID string, body map[string]any) []client.Slot {
	w.t.Helper()
	var b struct{ Slots []client.Slot }
	w.call(http.MethodPost, "/queue-runs/"+runID+"/slots", body).Must(http.StatusCreated, &b)
	return b.Slots
}

func (w *aptWorld) listSlots(runID, query string) []client.Slot {
	w.t.Helper()
	var out []client.Slot
	cursor := ""
	for {
		q := query + "&limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		var page client.SlotPage
		w.call(http.MethodGet, "/queue-runs/"+runID+"/slots?"+q, nil).Must(http.StatusOK, &page)
		out = append(out, page.Data...)
		if page.Pagination.NextCursor == nil {
			return out
		}
		cursor = *page.Pagination.NextCursor
	}
}

func (w *aptWorld) book(runID string, body any) *apptest.Response {
	w.t.Helper()
	return w.call(http.MethodPost, "/queue-runs/"+runID+"/appointments", body)
}

func aptIDs[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func TestAppointmentsEndToEnd(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		w := aptStart(t, start)
		queueID, runID := w.queue("APPOINTMENT", map[string]any{
			"location": map[string]any{"lat": 40.71, "lng": -74.0, "shortAddress": "Broadway 1", "timezone": "America/New_York"},
			"preAttention": map[string]any{"questions": []any{
				map[string]any{"id": "dose", "label": "Which dose?", "type": "choice", "required": true, "options": []any{"first", "second"}},
			}},
			"cancellation": map[string]any{"minNoticeMinutes": 60},
		})

		// Sunday 2026-03-08: New York skips 02:00-03:00. Real-time steps give
		// four one-hour slots between 00:00 and 05:00, not five.
		dst := w.generate(runID, map[string]any{"date": "2026-03-08", "startTime": "00:00", "endTime": "05:00", "slotMinutes": 60, "capacity": 2})
		var starts []string
		for _, s := range dst {
			starts = append(starts, s.Start.UTC().Format("15:04"))
			if s.End.Sub(s.Start) != time.Hour || s.Timezone != "America/New_York" || s.Date != "2026-03-08" || s.Remaining != 2 {
				t.Fatalf("slot %+v", s)
			}
		}
		if fmt.Sprint(starts) != "[05:00 06:00 07:00 08:00]" {
			t.Fatalf("UTC starts %v, want [05:00 06:00 07:00 08:00] (00:00 and 01:00 EST, 03:00 and 04:00 EDT)", starts)
		}
		// Today, 09:00-10:00 New York (14:00-15:00 UTC), capacity 1.
		today := w.generate(runID, map[string]any{"date": "2026-03-07", "startTime": "09:00", "endTime": "10:00", "slotMinutes": 30, "capacity": 1})

		t.Run("generation refusals", func(t *testing.T) {
			w := w.with(t)
			w.refused(w.call(http.MethodPost, "/queue-runs/"+runID+"/slots",
				map[string]any{"date": "2026-03-08", "startTime": "04:30", "endTime": "06:00", "slotMinutes": 30, "capacity": 2}),
				http.StatusConflict, "SLOT_OVERLAP")
			w.refused(w.call(http.MethodPost, "/queue-runs/"+runID+"/slots",
				map[string]any{"date": "2026-03-06", "startTime": "09:00", "endTime": "10:00", "slotMinutes": 30, "capacity": 2}),
				http.StatusUnprocessableEntity, "SLOT_DATE_IN_PAST")
			r := w.call(http.MethodPost, "/queue-runs/"+runID+"/slots",
				map[string]any{"date": "2026-03-09", "startTime": "10:00", "endTime": "09:00", "slotMinutes": 0, "capacity": 1001, "extra": true})
			w.refused(r, http.StatusBadRequest, "VALIDATION_ERROR")
			if !slices.Contains(r.FieldPaths(), "extra") {
				t.Fatalf("unknown member not named: %s", r.Body)
			}
			r = w.call(http.MethodPost, "/queue-runs/"+runID+"/slots",
				map[string]any{"date": "2026-03-09", "startTime": "10:00", "endTime": "09:00", "slotMinutes": 0, "capacity": 1001})
			w.refused(r, http.StatusBadRequest, "VALIDATION_ERROR")
			for _, p := range []string{"endTime", "slotMinutes", "capacity"} {
				if !slices.Contains(r.FieldPaths(), p) {
					t.Fatalf("%s not reported: %s", p, r.Body)
				}
			}
		})

		t.Run("slot listing", func(t *testing.T) {
			w := w.with(t)
			all := w.listSlots(runID, "")
			if len(all) != 6 || all[0].ID != today[0].ID || all[2].ID != dst[0].ID || all[5].ID != dst[3].ID {
				t.Fatalf("all slots in time order: %v", aptIDs(all, func(s client.Slot) string { return s.ID }))
			}
			if got := w.listSlots(runID, "available=false&date=2026-03-07"); len(got) != 2 {
				t.Fatalf("slots of the 7th: %d", len(got))
			}
			w.refused(w.call(http.MethodGet, "/queue-runs/"+runID+"/slots?available=yes", nil), http.StatusBadRequest, "VALIDATION_ERROR")
		})

		var first client.Appointment
		t.Run("booking", func(t *testing.T) {
			w := w.with(t)
			body := map[string]any{"slotId": today[0].ID, "idempotencyKey": "booking-0001", "customerName": "Ada",
				"phone": "+1 212-555-0100", "formResponse": map[string]string{"dose": "first"}}
			w.book(runID, body).Must(http.StatusCreated, &first)
			if first.SlotID != today[0].ID || first.Status != "SCHEDULED" || first.QueueRunID != runID || first.FormResponse["dose"] != "first" {
				t.Fatalf("appointment %+v", first)
			}
			var again client.Appointment
			w.book(runID, body).Must(http.StatusCreated, &again)
			if again.ID != first.ID {
				t.Fatalf("the repeat made %s, want %s", again.ID, first.ID)
			}
			body["customerName"] = "Bob"
			w.refused(w.book(runID, body), http.StatusConflict, "IDEMPOTENCY_KEY_REUSED")
			d := w.refused(w.book(runID, map[string]any{"slotId": today[0].ID, "formResponse": map[string]string{"dose": "first"}}),
				http.StatusConflict, "SLOT_FULL")
			if d["slotId"] != today[0].ID {
				t.Fatalf("details %v", d)
			}
			r := w.book(runID, map[string]any{"formResponse": map[string]string{"dose": "third", "age": "40"}})
			w.refused(r, http.StatusBadRequest, "VALIDATION_ERROR")
			if f := r.FieldPaths(); !slices.Contains(f, "formResponse.dose") || !slices.Contains(f, "formResponse.age") {
				t.Fatalf("fields %v", f)
			}
			w.refused(w.book(runID, map[string]any{"slotId": "slot_none", "formResponse": map[string]string{"dose": "first"}}),
				http.StatusUnprocessableEntity, "SLOT_NOT_FOUND")
			w.refused(w.book(runID, `{"slotId": 5}`), http.StatusBadRequest, "VALIDATION_ERROR")
			w.refused(w.book(runID, map[string]any{"idempotencyKey": "short"}), http.StatusBadRequest, "VALIDATION_ERROR")

			// Next available: today's 09:30 is the earliest slot with room.
			var next client.Appointment
			w.book(runID, map[string]any{"slotId": nil, "formResponse": map[string]string{"dose": "second"}}).Must(http.StatusCreated, &next)
			if next.SlotID != today[1].ID {
				t.Fatalf("next available went to %s, want %s", next.SlotID, today[1].ID)
			}
			if got := w.listSlots(runID, "available=true"); len(got) != 4 || got[0].ID != dst[0].ID {
				t.Fatalf("available after filling today: %v", aptIDs(got, func(s client.Slot) string { return s.ID }))
			}
		})

		t.Run("time moves", func(t *testing.T) {
			w := w.with(t)
			// 09:15 New York: the 09:00 slot has started.
			w.clock.Set(time.Date(2026, 3, 7, 14, 15, 0, 0, time.UTC))
			defer w.clock.Set(aptEpoch)
			w.refused(w.book(runID, map[string]any{"slotId": today[0].ID, "formResponse": map[string]string{"dose": "first"}}),
				http.StatusUnprocessableEntity, "SLOT_STARTED")
			// 60 minutes of notice: the 09:30 appointment can no longer be cancelled.
			var list struct{ Data []client.Appointment }
			w.call(http.MethodGet, "/queue-runs/"+runID+"/appointments?date=2026-03-07&status=SCHEDULED", nil).Must(http.StatusOK, &list)
			if len(list.Data) != 2 {
				t.Fatalf("scheduled today: %d", len(list.Data))
			}
			d := w.refused(w.call(http.MethodPost, "/appointments/"+list.Data[1].ID+"/cancel", nil), http.StatusUnprocessableEntity, "CANCELLATION_TOO_LATE")
			if d["minNoticeMinutes"] != float64(60) {
				t.Fatalf("details %v", d)
			}
			// Dropping the policy lets it through, and the seat comes back.
			w.call(http.MethodPut, "/queues/"+queueID+"/cancellation-policy", map[string]any{"minNoticeMinutes": nil}).Must(http.StatusOK, nil)
			var c client.Appointment
			w.call(http.MethodPost, "/appointments/"+list.Data[1].ID+"/cancel", nil).Must(http.StatusCreated, &c)
			if c.Status != "CANCELLED" {
				t.Fatalf("cancel %+v", c)
			}
			if got := w.listSlots(runID, "date=2026-03-07"); got[1].Remaining != 1 {
				t.Fatalf("remaining %d after the cancel", got[1].Remaining)
			}
			d = w.refused(w.call(http.MethodPost, "/appointments/"+list.Data[1].ID+"/check-in", nil), http.StatusConflict, "INVALID_TRANSITION")
			if d["status"] != "CANCELLED" {
				t.Fatalf("details %v", d)
			}
		})

		t.Run("lifecycle", func(t *testing.T) {
			w := w.with(t)
			w.clock.Set(time.Date(2026, 3, 7, 14, 5, 0, 0, time.UTC))
			defer w.clock.Set(aptEpoch)
			path := "/appointments/" + first.ID
			w.refused(w.call(http.MethodPost, path+"/complete", nil), http.StatusConflict, "INVALID_TRANSITION")
			var a client.Appointment
			w.call(http.MethodPost, path+"/check-in", map[string]any{}).Must(http.StatusCreated, &a)
			if a.Status != "CHECKED_IN" || a.CheckedInAt == nil {
				t.Fatalf("check-in %+v", a)
			}
			w.refused(w.call(http.MethodPost, path+"/start", map[string]any{"now": true}), http.StatusBadRequest, "VALIDATION_ERROR")
			w.call(http.MethodPost, path+"/start", nil).Must(http.StatusCreated, &a)
			w.call(http.MethodPost, path+"/complete", nil).Must(http.StatusCreated, &a)
			if a.Status != "COMPLETED" {
				t.Fatalf("complete %+v", a)
			}
			w.call(http.MethodGet, path, nil).Must(http.StatusOK, &a)
			if a.Status != "COMPLETED" || a.ID != first.ID {
				t.Fatalf("get %+v", a)
			}
			w.refused(w.call(http.MethodGet, "/appointments/apt_missing", nil), http.StatusNotFound, "NOT_FOUND")
			w.refused(w.call(http.MethodPost, "/appointments/apt_missing/no-show", nil), http.StatusNotFound, "NOT_FOUND")
		})

		t.Run("appointment listing", func(t *testing.T) {
			w := w.with(t)
			var page client.AppointmentPage
			w.call(http.MethodGet, "/queue-runs/"+runID+"/appointments?limit=1", nil).Must(http.StatusOK, &page)
			if len(page.Data) != 1 || page.Pagination.NextCursor == nil {
				t.Fatalf("first page %+v", page)
			}
			// A cursor of this run's list is refused on the slot list.
			w.refused(w.call(http.MethodGet, "/queue-runs/"+runID+"/slots?cursor="+*page.Pagination.NextCursor, nil), http.StatusBadRequest, "INVALID_CURSOR")
			w.call(http.MethodGet, "/queue-runs/"+runID+"/appointments?status=COMPLETED", nil).Must(http.StatusOK, &page)
			if len(page.Data) != 1 || page.Data[0].ID != first.ID {
				t.Fatalf("completed: %+v", page.Data)
			}
			w.refused(w.call(http.MethodGet, "/queue-runs/"+runID+"/appointments?status=DONE", nil), http.StatusBadRequest, "VALIDATION_ERROR")
		})

		t.Run("queue types, scopes and accounts", func(t *testing.T) {
			w := w.with(t)
			_, turnRun := w.queue("TURN", nil)
			d := w.refused(w.book(turnRun, nil), http.StatusConflict, "QUEUE_TYPE_MISMATCH")
			if d["queueType"] != "TURN" {
				t.Fatalf("details %v", d)
			}
			w.refused(w.call(http.MethodPost, "/queue-runs/"+turnRun+"/slots",
				map[string]any{"date": "2026-03-09", "startTime": "09:00", "endTime": "10:00", "slotMinutes": 30, "capacity": 1}),
				http.StatusConflict, "QUEUE_TYPE_MISMATCH")
			_, hybridRun := w.queue("HYBRID", nil)
			w.generate(hybridRun, map[string]any{"date": "2026-03-09", "startTime": "09:00", "endTime": "10:00", "slotMinutes": 30, "capacity": 1})
			w.book(hybridRun, nil).Must(http.StatusCreated, nil)

			reader := w.app.NewKey(w.app.AccountID, "appointments:read")
			w.callWith(reader, http.MethodGet, "/queue-runs/"+runID+"/slots", nil).Must(http.StatusOK, nil)
			d = w.refused(w.callWith(reader, http.MethodPost, "/queue-runs/"+runID+"/appointments", nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")
			if d["requiredScope"] != "appointments:write" {
				t.Fatalf("details %v", d)
			}
			queuesOnly := w.app.NewKey(w.app.AccountID, "queues:write")
			w.refused(w.callWith(queuesOnly, http.MethodGet, "/appointments/"+first.ID, nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")

			_, stranger := w.app.NewAccount("premium", "appointments:write")
			w.refused(w.callWith(stranger, http.MethodGet, "/appointments/"+first.ID, nil), http.StatusForbidden, "FORBIDDEN")
			w.refused(w.callWith(stranger, http.MethodGet, "/queue-runs/"+runID+"/slots", nil), http.StatusForbidden, "FORBIDDEN")
			w.refused(w.callWith(stranger, http.MethodPost, "/appointments/"+first.ID+"/cancel", nil), http.StatusForbidden, "FORBIDDEN")
		})
	})
}

// TestAppointmentBookingRaceOverHTTP sends 100 bookings of one 5-seat slot
// at once to a Postgres-backed process: 5 are made, 95 are SLOT_FULL.
func TestAppointmentBookingRaceOverHTTP(t *testing.T) {
	w := aptStart(t, apptest.Postgres)
	_, runID := w.queue("APPOINTMENT", nil)
	slot := w.generate(runID, map[string]any{"date": "2026-03-09", "startTime": "09:00", "endTime": "09:30", "slotMinutes": 30, "capacity": 5})[0]
	statuses := make([]int, 100)
	codes := make([]string, 100)
	done := make(chan struct{})
	release := make(chan struct{})
	for i := 0; i < 100; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			<-release
			resp := w.app.API(http.MethodPost, "/queue-runs/"+runID+"/appointments", map[string]any{"slotId": slot.ID})
			statuses[i], codes[i] = resp.Status, resp.ErrorCode()
		}()
	}
	close(release)
	for i := 0; i < 100; i++ {
		<-done
	}
	made, full := 0, 0
	for i := range statuses {
		switch {
		case statuses[i] == http.StatusCreated:
			made++
		case statuses[i] == http.StatusConflict && codes[i] == "SLOT_FULL":
			full++
		default:
			t.Fatalf("answer %d: %d %s", i, statuses[i], codes[i])
		}
	}
	if made != 5 || full != 95 {
		t.Fatalf("%d made, %d SLOT_FULL; want 5 and 95", made, full)
	}
	if got := w.listSlots(runID, ""); got[0].Remaining != 0 {
		t.Fatalf("remaining %d", got[0].Remaining)
	}
	var page struct{ Data []client.Appointment }
	w.call(http.MethodGet, "/queue-runs/"+runID+"/appointments", nil).Must(http.StatusOK, &page)
	if len(page.Data) != 5 {
		t.Fatalf("%d appointments", len(page.Data))
	}
}
