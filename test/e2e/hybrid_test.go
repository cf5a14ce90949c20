package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// TestHybridQueueCallsCheckedInAppointments runs a HYBRID queue end to end
// as staff would: walk-ins and a checked-in appointment share the line, in
// the order of their effective join times; next calls the appointment as
// a turn, the appointment follows its turn, and cancelling an appointment
// takes it out of the line. The order of the calls, with the positions
// before each, is logged.
func TestHybridQueueCallsCheckedInAppointments(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		w := aptStart(t, start)
		queueID, runID := w.queue("HYBRID", map[string]any{"turnPrefix": "H", "dispatchFlow": map[string]any{"trackService": true}})
		stream := openSSE(t, streamURL(w.app, "runId="+runID), keyHeader(w.app.Key))
		defer stream.Close()
		// aptEpoch is Saturday 12:00 UTC; slots from 12:30.
		slots := w.generate(runID, map[string]any{"date": "2026-03-07", "startTime": "12:30", "endTime": "13:30",
			"slotMinutes": 30, "capacity": 2})
		var p, q client.Appointment
		w.book(runID, map[string]any{"slotId": slots[0].ID}).Must(http.StatusCreated, &p)
		w.book(runID, map[string]any{"slotId": slots[0].ID}).Must(http.StatusCreated, &q)

		type turn struct {
			ID            string
			DisplayCode   string
			Status        string
			Position      *int
			AppointmentID *string
		}
		walkIn := func() turn {
			var v turn
			w.call(http.MethodPost, "/queue-runs/"+runID+"/turns", map[string]any{}).Must(http.StatusCreated, &v)
			return v
		}
		get := func(id string) turn {
			var v turn
			w.call(http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, &v)
			return v
		}
		type appointment struct {
			Status string
			TurnID *string
		}
		getApt := func(id string) appointment {
			var a appointment
			w.call(http.MethodGet, "/appointments/"+id, nil).Must(http.StatusOK, &a)
			return a
		}

		w.clock.Set(aptEpoch.Add(35 * time.Minute)) // 12:35: the slot has started
		w1 := walkIn()
		w.clock.Advance(time.Minute)
		var checked appointment
		w.call(http.MethodPost, "/appointments/"+p.ID+"/check-in", nil).Must(http.StatusCreated, &checked)
		if checked.TurnID == nil {
			t.Fatal("a checked-in appointment of a started slot stands in the line")
		}
		pt := get(*checked.TurnID)
		if pt.AppointmentID == nil || *pt.AppointmentID != p.ID || pt.Status != "WAITING" || !strings.HasPrefix(pt.DisplayCode, "H") {
			t.Fatalf("the appointment's turn: %+v", pt)
		}
		w.clock.Advance(time.Minute)
		w2 := walkIn()
		w.call(http.MethodPost, "/appointments/"+q.ID+"/check-in", nil).Must(http.StatusCreated, nil)
		qa := getApt(q.ID)
		if qa.TurnID == nil {
			t.Fatalf("the second appointment's turn is not recorded: %+v", qa)
		}
		qt := *qa.TurnID

		// Dispatching an appointment in line goes through its turn.
		w.refused(w.call(http.MethodPost, "/appointments/"+p.ID+"/start", nil), http.StatusConflict, "APPOINTMENT_IN_LINE")
		// Cancelling an appointment takes it out of the line.
		w.call(http.MethodPost, "/appointments/"+q.ID+"/cancel", nil).Must(http.StatusCreated, nil)
		if st := get(qt).Status; st != "CANCELLED" {
			t.Fatalf("the cancelled appointment's turn: %s", st)
		}

		// The dashboard counts the appointment among those waiting.
		var dash struct {
			Queues []struct {
				QueueID string `json:"queueId"`
				Waiting int    `json:"waiting"`
			} `json:"queues"`
		}
		w.call(http.MethodGet, "/analytics/dashboard", nil).Must(http.StatusOK, &dash)
		waiting := -1
		for _, q := range dash.Queues {
			if q.QueueID == queueID {
				waiting = q.Waiting
			}
		}
		if waiting != 3 {
			t.Fatalf("dashboard waiting: %d, want 3 (two walk-ins and the appointment)", waiting)
		}

		var order []string
		names := map[string]string{w1.ID: "walk-in 1", pt.ID: "appointment", w2.ID: "walk-in 2"}
		for range 3 {
			var line []string
			for _, id := range []string{w1.ID, pt.ID, w2.ID} {
				if v := get(id); v.Position != nil {
					line = append(line, fmt.Sprintf("%s@%d", names[id], *v.Position))
				}
			}
			var called turn
			w.call(http.MethodPost, "/queue-runs/"+runID+"/dispatch/next", map[string]any{}).Must(http.StatusCreated, &called)
			order = append(order, names[called.ID])
			t.Logf("line %v: next calls %s", line, names[called.ID])
			if called.ID == pt.ID {
				if a := getApt(p.ID); a.Status != "CHECKED_IN" {
					t.Fatalf("called: the appointment is still CHECKED_IN, got %s", a.Status)
				}
				w.call(http.MethodPost, "/turns/"+pt.ID+"/start", nil).Must(http.StatusCreated, nil)
				if a := getApt(p.ID); a.Status != "IN_SERVICE" {
					t.Fatalf("started: %s", a.Status)
				}
				w.call(http.MethodPost, "/turns/"+pt.ID+"/complete", nil).Must(http.StatusCreated, nil)
				if a := getApt(p.ID); a.Status != "COMPLETED" {
					t.Fatalf("completed: %s", a.Status)
				}
			}
		}
		if want := "walk-in 1,appointment,walk-in 2"; strings.Join(order, ",") != want {
			t.Fatalf("call order %v, want %s", order, want)
		}
		w.refused(w.call(http.MethodPost, "/queue-runs/"+runID+"/dispatch/next", map[string]any{}), http.StatusConflict, "NO_WAITING_TURNS")

		// The stream carries the appointment's turn like any other, and one
		// appointment.completed for the completed appointment.
		completed, created := 0, 0
		for {
			m := stream.message(5 * time.Second)
			if m.Event == "appointment.completed" && m.Data["appointmentId"] == p.ID {
				completed++
			}
			if m.Event == "turn.created" && m.Data["turnId"] == pt.ID {
				created++
			}
			if m.Event == "turn.called" && m.Data["turnId"] == w2.ID {
				break // the last change of the scenario
			}
		}
		stream.none(300 * time.Millisecond)
		if completed != 1 || created != 1 {
			t.Fatalf("appointment.completed %d times, the appointment's turn.created %d times; want 1 and 1", completed, created)
		}
		// The cancelled appointment's seat came back.
		for _, s := range w.listSlots(runID, "") {
			if s.ID == slots[0].ID && s.Remaining != 1 {
				t.Fatalf("slot remaining after one cancel of two: %d", s.Remaining)
			}
		}
	})
}
