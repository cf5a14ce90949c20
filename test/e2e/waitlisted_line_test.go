package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestWaitlistedIntakeKeepsScreensPatching (issue 30, one row per intake):
// an intake draws its number and the run's next line version together, so
// one whose turn does not join the line (WAITLISTED) still records a change,
// empty, under its version. Another process's cached line (its screens' and
// tickets' views) then patches through it, version after version, instead
// of finding a version without its change and reading the whole line
// again; and the run's recorded changes have no gap.
func TestWaitlistedIntakeKeepsScreensPatching(t *testing.T) {
	url := pgtest.URL(t)
	rt := &roundTrips{}
	a := apptest.PostgresAt(t, url, whNoLimit)
	b := apptest.PostgresAt(t, url, whNoLimit, apptest.WithDBTracer(rt.tracer()))
	_, _, run := setupQueue(t, a, map[string]any{"capacity": map[string]any{"maxTurns": 2, "waitlistEnabled": true}})
	key := a.Key // b knows it from the database
	type turn struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Position *int   `json:"position"`
	}
	add := func(want string) turn {
		t.Helper()
		var got turn
		a.APIWith(key, http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}).Must(http.StatusCreated, &got)
		if got.Status != want {
			t.Fatalf("intake: %s, want %s", got.Status, want)
		}
		return got
	}
	view := func(id string) (turn, []string) {
		t.Helper()
		var got turn
		trips := rt.during(func() { b.APIWith(key, http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, &got) })
		return got, trips
	}
	first := add("WAITING")
	add("WAITING") // a's intakes from here draw ahead (its queue is cached)
	if v, _ := view(first.ID); v.Position == nil || *v.Position != 1 {
		t.Fatalf("the first turn's view: position %v, want 1", v.Position)
	}
	// b's line is cached; a's next intakes only wait for room.
	for range 3 {
		add("WAITLISTED")
		v, trips := view(first.ID)
		if v.Position == nil || *v.Position != 1 {
			t.Fatalf("the first turn's view after a WAITLISTED intake: position %v, want 1", v.Position)
		}
		for _, s := range trips {
			if strings.Contains(s, "array_agg(priority_rank") {
				t.Fatalf("process b read the whole line again after a WAITLISTED intake:\n  %s", strings.Join(trips, "\n  "))
			}
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var version, changes, top int64
	err = conn.QueryRow(ctx, `SELECT
		(SELECT line_version FROM turn_counters WHERE run_id = $1),
		(SELECT count(*) FROM turn_line_changes WHERE run_id = $1),
		(SELECT max(version) FROM turn_line_changes WHERE run_id = $1)`, run).Scan(&version, &changes, &top)
	if err != nil {
		t.Fatal(err)
	}
	if version != 5 || changes != version || top != version {
		t.Fatalf("after two WAITING and three WAITLISTED intakes: line version %d, %d changes up to %d; want 5, every version's",
			version, changes, top)
	}
}
