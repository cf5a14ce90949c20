package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestIntakeAcrossProcessesKeepsTwoRoundTrips (issue 30, several
// processes): two processes on one database take turns adding to one run.
// Each intake's answer patches the process's cached line with the changes
// the other process made since, and those are read after the run's lock in
// the lock's own round trip, so the intake stays at two round trips (the
// lock's batch and the COMMIT's) while it holds the run, where reading
// them apart made three. Every answer's position is the turn's place in
// the line, which the other process keeps changing.
func TestIntakeAcrossProcessesKeepsTwoRoundTrips(t *testing.T) {
	url := pgtest.URL(t)
	rt := &roundTrips{}
	a := apptest.PostgresAt(t, url, whNoLimit, apptest.WithDBTracer(rt.tracer()))
	b := apptest.PostgresAt(t, url, whNoLimit)
	_, key := a.NewAccount("premium", "all")
	var e client.Entity
	a.APIWith(key, http.MethodPost, "/entities", map[string]any{"name": "Centro"}).Must(http.StatusCreated, &e)
	var q struct {
		Runs []struct{ ID string } `json:"runs"`
	}
	a.APIWith(key, http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Caja", "type": "TURN"}).
		Must(http.StatusCreated, &q)
	run := q.Runs[0].ID
	var answer struct {
		Position *int `json:"position"`
	}
	add := func(app *apptest.App) int {
		t.Helper()
		app.APIWith(key, http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}).Must(http.StatusCreated, &answer)
		if answer.Position == nil {
			t.Fatal("a waiting turn's answer has no position")
		}
		return *answer.Position
	}
	waiting := 0
	for i := range 12 {
		// b adds one or two: a's cached line falls behind by as many.
		for range 1 + i%2 {
			waiting++
			if p := add(b); p != waiting {
				t.Fatalf("process b's answer: position %d, want %d", p, waiting)
			}
		}
		waiting++
		var p int
		trips := rt.during(func() { p = add(a) })
		if p != waiting {
			t.Fatalf("process a's answer after b's changes: position %d, want %d", p, waiting)
		}
		if i < 2 {
			continue // a caches the line, and learns it is shared
		}
		var sent []string
		for _, s := range trips {
			if !strings.HasPrefix(s, "prepare ") && !strings.Contains(s, "rate_limits") {
				sent = append(sent, s)
			}
		}
		if len(sent) > 2 {
			t.Errorf("intake %d on process a, after process b changed the line: %d round trips, want 2:\n  %s",
				i, len(sent), strings.Join(sent, "\n  "))
		}
		if !strings.Contains(fmt.Sprint(sent), "turn_line_changes WHERE run_id = $1 AND version > $2 ORDER BY version LIMIT") {
			t.Errorf("intake %d: the line changes not read with the lock:\n  %s", i, strings.Join(sent, "\n  "))
		}
	}
}
