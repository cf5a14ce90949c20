package e2e

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// TestRaceHybridCheckInsWalkInsAndDispatch runs a HYBRID queue's everyday
// mix at once: appointments check in while walk-ins arrive and staff call
// and complete turns. Afterwards every request was answered (no 5xx), every
// turn was called exactly once, and every appointment is COMPLETED with
// exactly one appointment.completed, its turn completed with it.
func TestRaceHybridCheckInsWalkInsAndDispatch(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		w := aptStart(t, start)
		_, runID := w.queue("HYBRID", map[string]any{"dispatchFlow": map[string]any{"trackService": false}})
		stream := openSSE(t, streamURL(w.app, "runId="+runID), keyHeader(w.app.Key))
		defer stream.Close()
		slots := w.generate(runID, map[string]any{"date": "2026-03-07", "startTime": "12:30", "endTime": "13:30",
			"slotMinutes": 30, "capacity": 10})
		const n = 10
		apts := make([]string, n)
		for i := range apts {
			var a client.Appointment
			w.book(runID, map[string]any{"slotId": slots[0].ID}).Must(http.StatusCreated, &a)
			apts[i] = a.ID
		}
		w.clock.Set(aptEpoch.Add(40 * time.Minute)) // the slot has started

		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			failures []string
			called   = map[string]int{}
		)
		fail := func(what string, r *apptest.Response) {
			mu.Lock()
			defer mu.Unlock()
			failures = append(failures, what+": "+string(r.Body))
		}
		for i := range n {
			wg.Add(2)
			go func() { // a customer with an appointment arrives
				defer wg.Done()
				if r := w.app.API(http.MethodPost, "/appointments/"+apts[i]+"/check-in", nil); r.Status != http.StatusCreated {
					fail("check-in", r)
				}
			}()
			go func() { // a walk-in arrives
				defer wg.Done()
				if r := w.app.API(http.MethodPost, "/queue-runs/"+runID+"/turns", map[string]any{}); r.Status != http.StatusCreated {
					fail("walk-in", r)
				}
			}()
		}
		for range 3 { // three counters call and serve until nobody is left
			wg.Add(1)
			go func() {
				defer wg.Done()
				idle := 0
				for idle < 20 {
					r := w.app.API(http.MethodPost, "/queue-runs/"+runID+"/dispatch/next", map[string]any{})
					if r.Status == http.StatusConflict && r.ErrorCode() == "NO_WAITING_TURNS" {
						idle++
						time.Sleep(10 * time.Millisecond)
						continue
					}
					if r.Status != http.StatusCreated {
						fail("next", r)
						return
					}
					idle = 0
					var v struct{ ID string }
					r.Decode(&v)
					mu.Lock()
					called[v.ID]++
					mu.Unlock()
					if r := w.app.API(http.MethodPost, "/turns/"+v.ID+"/complete", nil); r.Status != http.StatusCreated {
						fail("complete", r)
					}
				}
			}()
		}
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("%d requests failed, first: %s", len(failures), failures[0])
		}
		if len(called) != 2*n {
			t.Fatalf("%d turns called, want %d", len(called), 2*n)
		}
		for id, c := range called {
			if c != 1 {
				t.Fatalf("turn %s called %d times", id, c)
			}
		}
		completed := map[string]int{}
		for _, id := range apts {
			var a struct {
				Status string
				TurnID *string
			}
			w.call(http.MethodGet, "/appointments/"+id, nil).Must(http.StatusOK, &a)
			if a.Status != "COMPLETED" || a.TurnID == nil || called[*a.TurnID] != 1 {
				t.Fatalf("appointment %s: %s, turn %v", id, a.Status, a.TurnID)
			}
		}
		for turnsDone, seen := 0, 0; turnsDone < 2*n || seen < n; {
			switch m := stream.message(10 * time.Second); m.Event {
			case "appointment.completed":
				id, _ := m.Data["appointmentId"].(string)
				completed[id]++
				seen++
			case "turn.completed":
				turnsDone++
			}
		}
		stream.none(500 * time.Millisecond)
		for _, id := range apts {
			if completed[id] != 1 {
				t.Fatalf("appointment.completed for %s: %d, want 1", id, completed[id])
			}
		}
	})
}
