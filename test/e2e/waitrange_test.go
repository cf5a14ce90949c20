package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
)

// TestWaitEstimateRange: the wait estimate of a waiting turn carries a
// range once the queue has three measured services, and says null (with
// basis "default") before, rather than inventing one.
func TestWaitEstimateRange(t *testing.T) {
	clock := platformtest.NewClock(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
	app := apptest.Memory(t, apptest.WithClock(clock))
	q := newLiveQueue(t, app, "Pharmacy", nil)
	type estimate struct {
		Seconds int
		Basis   string
		Range   *struct{ P50Seconds, P90Seconds, P50Minutes, P90Minutes, Samples int }
	}
	take := func() string {
		var v struct{ ID string }
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &v)
		return v.ID
	}
	wait := func(id string) estimate {
		var v struct{ WaitEstimate *estimate }
		app.API(http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, &v)
		if v.WaitEstimate == nil {
			t.Fatalf("turn %s has no wait estimate", id)
		}
		return *v.WaitEstimate
	}

	first := take()
	if e := wait(first); e.Basis != "default" || e.Range != nil {
		t.Fatalf("without history: %+v, want basis default and no range", e)
	}
	// Three services of 4, 5 and 6 minutes: the first turn and two more.
	served := []string{first, take(), take()}
	for i, minutes := range []int{4, 5, 6} {
		var called struct{ ID string }
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/dispatch/next", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, &called)
		if called.ID != served[i] {
			t.Fatalf("dispatch/next called %s, want %s", called.ID, served[i])
		}
		app.API(http.MethodPost, "/turns/"+called.ID+"/start", nil).Must(http.StatusCreated, nil)
		clock.Advance(time.Duration(minutes) * time.Minute)
		app.API(http.MethodPost, "/turns/"+called.ID+"/complete", nil).Must(http.StatusCreated, nil)
	}
	a, b := take(), take()
	ea, eb := wait(a), wait(b)
	if ea.Basis != "history" || ea.Range == nil || eb.Range == nil {
		t.Fatalf("with history: %+v %+v", ea, eb)
	}
	// Next in line: the service times' percentiles (300 s and 348 s); the
	// one behind it: two services (600 s, and 709 s at p90).
	if r := *ea.Range; r.P50Seconds != 300 || r.P90Seconds != 348 || r.P50Minutes != 5 || r.P90Minutes != 6 || r.Samples != 3 {
		t.Fatalf("next in line: %+v", r)
	}
	if r := *eb.Range; r.P50Seconds != 600 || r.P90Seconds != 709 || r.P90Minutes != 12 {
		t.Fatalf("second in line: %+v", r)
	}
}
