package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// TestHybridAppointmentClosedAtItsSlotsStartJoinsWhenTheRunOpens (issue
// 23), through the API of a real process on each storage, on the wall
// clock (the join job runs at the slot's real start, on the memory runner
// and on River): an appointment checked in early is in no line while the
// run is closed over its slot's start, but it is not lost: its read says
// it is waiting to join (joinsLineAt past, turnId null), the dashboard
// counts it (waitingToJoin) and the board counts it as waiting; a late
// check-in on the closed run is refused (QUEUE_CLOSED); when the run opens
// again the appointment joins the line and next calls it. Before: the job
// failed with QUEUE_CLOSED about ten times and was discarded, and the
// appointment stayed CHECKED_IN with turnId null for good.
func TestHybridAppointmentClosedAtItsSlotsStartJoinsWhenTheRunOpens(t *testing.T) {
	for name, start := range map[string]func(t testing.TB, opts ...apptest.Option) *apptest.App{
		"memory": apptest.Memory, "postgres": apptest.Postgres,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each waits for a slot to start on the wall clock
			hybridClosedAtSlotStart(t, start)
		})
	}
}

func hybridClosedAtSlotStart(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
	a := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	w := &aptWorld{t: t, app: a}
	var e client.Entity
	w.call(http.MethodPost, "/entities", map[string]any{"name": "Clinic"}).Must(http.StatusCreated, &e)
	w.entity = e.ID
	queueID, runID := w.queue("HYBRID", nil) // UTC: no location

	// A one-minute slot starting at the next minute at least 10 s away.
	now := time.Now().UTC()
	slotStart := now.Truncate(time.Minute).Add(time.Minute)
	for slotStart.Sub(now) < 10*time.Second || slotStart.Add(time.Minute).Day() != slotStart.Day() {
		slotStart = slotStart.Add(time.Minute)
	}
	slots := w.generate(runID, map[string]any{"date": slotStart.Format(time.DateOnly), "startTime": slotStart.Format("15:04"),
		"endTime": slotStart.Add(time.Minute).Format("15:04"), "slotMinutes": 1, "capacity": 2})
	var early, late client.Appointment
	w.book(runID, map[string]any{"slotId": slots[0].ID}).Must(http.StatusCreated, &early)
	w.book(runID, map[string]any{"slotId": slots[0].ID}).Must(http.StatusCreated, &late)

	type apt struct {
		Status      string
		TurnID      *string
		JoinsLineAt *time.Time
	}
	read := func(id string) apt {
		var v apt
		w.call(http.MethodGet, "/appointments/"+id, nil).Must(http.StatusOK, &v)
		return v
	}
	var checked apt
	w.call(http.MethodPost, "/appointments/"+early.ID+"/check-in", nil).Must(http.StatusCreated, &checked)
	if checked.TurnID != nil || checked.JoinsLineAt == nil || !checked.JoinsLineAt.Equal(slotStart) {
		t.Fatalf("early check-in: %+v, want joinsLineAt %v", checked, slotStart)
	}
	w.call(http.MethodPost, "/queue-runs/"+runID+"/close", nil).Must(http.StatusCreated, nil)
	var tok client.DisplayTokenCreated
	w.call(http.MethodPost, "/queue-runs/"+runID+"/display-tokens", map[string]any{"label": "Lobby"}).Must(http.StatusCreated, &tok)

	// The slot starts with the run closed; the job runs (River fetches
	// scheduled jobs every few seconds).
	time.Sleep(time.Until(slotStart.Add(7 * time.Second)))
	if v := read(early.ID); v.Status != "CHECKED_IN" || v.TurnID != nil || v.JoinsLineAt == nil || v.JoinsLineAt.After(time.Now()) {
		t.Fatalf("while the run is closed: %+v, want waiting to join", v)
	}
	waitingToJoin := func() int {
		var d struct {
			Queues []struct {
				QueueID       string
				WaitingToJoin int
			}
		}
		w.call(http.MethodGet, "/analytics/dashboard", nil).Must(http.StatusOK, &d)
		for _, q := range d.Queues {
			if q.QueueID == queueID {
				return q.WaitingToJoin
			}
		}
		return -1
	}
	if n := waitingToJoin(); n != 1 {
		t.Fatalf("dashboard waitingToJoin %d, want 1", n)
	}
	var board struct{ Waiting struct{ Count int } }
	a.Do(http.MethodGet, "/display/"+tok.Token+"/board", nil, nil).Must(http.StatusOK, &board)
	if board.Waiting.Count != 1 {
		t.Fatalf("the board counts %d waiting, want the appointment", board.Waiting.Count)
	}
	w.refused(w.call(http.MethodPost, "/appointments/"+late.ID+"/check-in", nil), http.StatusConflict, "QUEUE_CLOSED")

	// The run opens again: the appointment is in the line, and called.
	w.call(http.MethodPost, "/queue-runs/"+runID+"/open", nil).Must(http.StatusCreated, nil)
	v := read(early.ID)
	if v.TurnID == nil || v.JoinsLineAt != nil || v.Status != "CHECKED_IN" {
		t.Fatalf("after the run opened: %+v", v)
	}
	if n := waitingToJoin(); n != 0 {
		t.Fatalf("dashboard waitingToJoin %d after the join", n)
	}
	var called struct{ ID string }
	w.call(http.MethodPost, "/queue-runs/"+runID+"/dispatch/next", map[string]any{}).Must(http.StatusCreated, &called)
	if called.ID != *v.TurnID {
		t.Fatalf("next called %s, want the appointment's turn %s", called.ID, *v.TurnID)
	}
}
