package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// turnWorld is one process with a branch, for the turn scenarios.
type turnWorld struct {
	t      *testing.T
	app    *apptest.App
	entity string
}

func turnStart(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App, opts ...apptest.Option) *turnWorld {
	t.Helper()
	opts = append([]apptest.Option{apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 1000000 })}, opts...)
	app := start(t, opts...)
	w := &turnWorld{t: t, app: app}
	var e client.Entity
	app.API(http.MethodPost, "/entities", map[string]any{"name": "Pharmacy"}).Must(http.StatusCreated, &e)
	w.entity = e.ID
	return w
}

// queue creates a TURN queue with the given settings.
func (w *turnWorld) queue(settings map[string]any) client.QueueView {
	w.t.Helper()
	body := map[string]any{"entityId": w.entity, "name": "Counter", "type": "TURN"}
	for k, v := range settings {
		body[k] = v
	}
	var q client.QueueView
	w.app.API(http.MethodPost, "/queues", body).Must(http.StatusCreated, &q)
	return q
}

func (w *turnWorld) take(run string, body any) client.Turn {
	w.t.Helper()
	var v client.Turn
	w.app.API(http.MethodPost, "/queue-runs/"+run+"/turns", body).Must(http.StatusCreated, &v)
	return v
}

func (w *turnWorld) op(id, op string, body any) *apptest.Response {
	w.t.Helper()
	return w.app.API(http.MethodPost, "/turns/"+id+"/"+op, body)
}

func (w *turnWorld) get(id string) client.Turn {
	w.t.Helper()
	var v client.Turn
	w.app.API(http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, &v)
	return v
}

// wantError checks an error envelope's status and code, and returns its
// details.
func wantError(t *testing.T, r *apptest.Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status || r.ErrorCode() != code {
		t.Fatalf("want %d %s, got %d %s", status, code, r.Status, r.Body)
	}
	var env struct {
		Error struct{ Details map[string]any } `json:"error"`
	}
	r.Decode(&env)
	return env.Error.Details
}

func TestTurnsLifecycle(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		w := turnStart(t, start)
		q := w.queue(map[string]any{"turnPrefix": "A", "turnPadding": 3,
			"stations": []any{map[string]any{"label": "Desk 1"}, map[string]any{"label": "Desk 2"}}})
		run := q.Runs[0].ID
		a := w.take(run, nil)
		b := w.take(run, map[string]any{"peopleCount": 2, "phone": "+34600111222", "notifyWhatsapp": true})
		c := w.take(run, map[string]any{})
		if a.DisplayCode != "A001" || b.DisplayCode != "A002" || c.DisplayCode != "A003" || a.Status != "WAITING" {
			t.Fatalf("codes: %s %s %s", a.DisplayCode, b.DisplayCode, c.DisplayCode)
		}

		got := w.get(c.ID)
		if got.Position == nil || *got.Position != 3 || got.WaitEstimate == nil || got.WaitEstimate.Basis != "default" ||
			got.Queue.ID != q.ID || got.Queue.Name != "Counter" || got.QueueRunID != run || got.Station != nil {
			t.Fatalf("full view: %+v", got)
		}

		// dispatch/next to a station; the station serves one turn at a time.
		var called client.Turn
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", map[string]any{"stationId": q.Stations[0].ID}).Must(http.StatusCreated, &called)
		if called.ID != a.ID || called.Status != "CALLED" || called.Position != nil || called.Station == nil || called.Station.Label != "Desk 1" {
			t.Fatalf("next: %+v", called)
		}
		wantError(t, w.app.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", map[string]any{"stationId": q.Stations[0].ID}), http.StatusConflict, "STATION_BUSY")
		if p := w.get(b.ID).Position; p == nil || *p != 1 {
			t.Fatalf("b is next: %v", p)
		}

		w.op(a.ID, "arrive", nil).Must(http.StatusCreated, nil)
		d := wantError(t, w.op(a.ID, "complete", nil), http.StatusConflict, "INVALID_TRANSITION")
		if d["status"] != "CALLED" || d["operation"] != "complete" {
			t.Fatalf("details: %v", d)
		}
		w.op(a.ID, "start", nil).Must(http.StatusCreated, nil)
		var done client.Turn
		w.op(a.ID, "complete", nil).Must(http.StatusCreated, &done)
		if done.Status != "COMPLETED" {
			t.Fatalf("complete: %s", done.Status)
		}
		d = wantError(t, w.op(a.ID, "hold", nil), http.StatusConflict, "INVALID_TRANSITION")
		if d["status"] != "COMPLETED" {
			t.Fatalf("details: %v", d)
		}

		// call out of order, hold, release, priority, assign-station.
		var cv client.Turn
		w.op(c.ID, "call", map[string]any{"stationId": q.Stations[1].ID}).Must(http.StatusCreated, &cv)
		if cv.Status != "CALLED" || *cv.StationID != q.Stations[1].ID {
			t.Fatalf("call: %+v", cv)
		}
		w.op(c.ID, "hold", nil).Must(http.StatusCreated, nil)
		w.op(c.ID, "release", nil).Must(http.StatusCreated, &cv)
		if cv.Status != "WAITING" || cv.Position == nil || *cv.Position != 1 {
			t.Fatalf("released after its call: at the head of the line, before b: %+v", cv)
		}
		w.op(b.ID, "priority", map[string]any{"priority": "VERY_HIGH"}).Must(http.StatusCreated, nil)
		if p := w.get(b.ID).Position; p == nil || *p != 1 {
			t.Fatalf("VERY_HIGH first: %v", p)
		}
		wantError(t, w.op(b.ID, "priority", map[string]any{"priority": "URGENT"}), http.StatusBadRequest, "VALIDATION_ERROR")
		w.op(b.ID, "assign-station", map[string]any{"stationId": q.Stations[1].ID}).Must(http.StatusCreated, nil)
		var cleared client.Turn
		w.op(b.ID, "assign-station", map[string]any{"stationId": nil}).Must(http.StatusCreated, &cleared)
		if cleared.StationID != nil {
			t.Fatalf("null clears: %v", *cleared.StationID)
		}
		wantError(t, w.op(b.ID, "assign-station", map[string]any{}), http.StatusBadRequest, "VALIDATION_ERROR")
		wantError(t, w.op(b.ID, "assign-station", map[string]any{"stationId": "sta_nope"}), http.StatusUnprocessableEntity, "STATION_NOT_IN_QUEUE")

		// cancel (turns:write), then nothing left but b.
		w.op(c.ID, "cancel", nil).Must(http.StatusCreated, nil)
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil).Must(http.StatusCreated, nil)
		wantError(t, w.app.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil), http.StatusConflict, "NO_WAITING_TURNS")

		// Lists: status filters (repeated and comma-separated), paging.
		var page client.TurnPage
		w.app.API(http.MethodGet, "/queue-runs/"+run+"/turns?status=CALLED,CANCELLED", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 2 || page.Data[0].ID != b.ID || page.Data[1].ID != c.ID {
			t.Fatalf("filter: %+v", page.Data)
		}
		w.app.API(http.MethodGet, "/queue-runs/"+run+"/turns?status=COMPLETED&status=CANCELLED", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 2 {
			t.Fatalf("repeated filter: %+v", page.Data)
		}
		wantError(t, w.app.API(http.MethodGet, "/queue-runs/"+run+"/turns?status=DONE", nil), http.StatusBadRequest, "VALIDATION_ERROR")
		w.app.API(http.MethodGet, "/queue-runs/"+run+"/turns?limit=2", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 2 || page.Pagination.NextCursor == nil || page.Pagination.Limit != 2 {
			t.Fatalf("page 1: %+v", page)
		}
		w.app.API(http.MethodGet, "/queue-runs/"+run+"/turns?limit=2&cursor="+*page.Pagination.NextCursor, nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 || page.Data[0].ID != c.ID || page.Pagination.NextCursor != nil {
			t.Fatalf("page 2: %+v", page)
		}
		w.app.API(http.MethodGet, "/queue-runs/"+run+"/arrivals", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 0 {
			t.Fatalf("arrivals: the arrived turn is finished: %+v", page.Data)
		}
		w.op(b.ID, "arrive", nil).Must(http.StatusCreated, nil)
		w.app.API(http.MethodGet, "/queue-runs/"+run+"/arrivals", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 || page.Data[0].ID != b.ID || page.Data[0].ArrivedAt == nil {
			t.Fatalf("arrivals: %+v", page.Data)
		}
	})
}

func TestTurnsIntakeRefusals(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		w := turnStart(t, start)
		q := w.queue(map[string]any{"capacity": map[string]any{"maxTurns": 1},
			"preAttention": map[string]any{"questions": []any{
				map[string]any{"id": "reason", "label": "Reason", "type": "choice", "required": true,
					"options": []any{"Pickup", map[string]any{"label": "Urgent", "prefix": "U", "priority": "HIGH"}}},
			}}})
		run := q.Runs[0].ID
		path := "/queue-runs/" + run + "/turns"

		r := w.app.API(http.MethodPost, path, map[string]any{"formResponse": map[string]any{"reason": "Other", "x": "y"}})
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		wantError(t, w.app.API(http.MethodPost, path, map[string]any{"peopleCount": 21}), http.StatusBadRequest, "VALIDATION_ERROR")
		wantError(t, w.app.API(http.MethodPost, path, map[string]any{"colour": "red"}), http.StatusBadRequest, "VALIDATION_ERROR")
		wantError(t, w.app.API(http.MethodPost, path, map[string]any{"idempotencyKey": "short"}), http.StatusBadRequest, "VALIDATION_ERROR")

		urgent := w.take(run, map[string]any{"formResponse": map[string]any{"reason": "Urgent"}, "idempotencyKey": "order-00001"})
		if urgent.DisplayCode != "U1" || urgent.Priority != "HIGH" {
			t.Fatalf("option prefix and priority: %s %s", urgent.DisplayCode, urgent.Priority)
		}
		// The same key and body: the same turn, marked as a replay.
		again := w.app.API(http.MethodPost, path, map[string]any{"formResponse": map[string]any{"reason": "Urgent"}, "idempotencyKey": "order-00001"})
		var av client.Turn
		again.Must(http.StatusCreated, &av)
		if av.ID != urgent.ID || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %s %q", av.ID, again.Header.Get("Idempotent-Replayed"))
		}
		wantError(t, w.app.API(http.MethodPost, path, map[string]any{"formResponse": map[string]any{"reason": "Pickup"}, "idempotencyKey": "order-00001"}),
			http.StatusConflict, "IDEMPOTENCY_KEY_REUSED")

		d := wantError(t, w.app.API(http.MethodPost, path, map[string]any{"formResponse": map[string]any{"reason": "Pickup"}}), http.StatusConflict, "CAPACITY_REACHED")
		if d["maxTurns"] != float64(1) {
			t.Fatalf("details: %v", d)
		}
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/close-intake", nil).Must(http.StatusCreated, nil)
		wantError(t, w.app.API(http.MethodPost, path, nil), http.StatusConflict, "INTAKE_CLOSED")
		// Its pending turns are still served.
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil).Must(http.StatusCreated, nil)
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/close", nil).Must(http.StatusCreated, nil)
		wantError(t, w.app.API(http.MethodPost, path, nil), http.StatusConflict, "QUEUE_CLOSED")
		wantError(t, w.app.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil), http.StatusConflict, "QUEUE_CLOSED")

		wantError(t, w.app.API(http.MethodGet, "/turns/turn_nope", nil), http.StatusNotFound, "NOT_FOUND")
		wantError(t, w.app.API(http.MethodPost, "/queue-runs/run_nope/turns", nil), http.StatusNotFound, "NOT_FOUND")
	})
}

func TestTurnsScopesAndAccounts(t *testing.T) {
	w := turnStart(t, apptest.Memory)
	q := w.queue(nil)
	run := q.Runs[0].ID
	v := w.take(run, nil)

	reader := w.app.NewKey(w.app.AccountID, "turns:read")
	taker := w.app.NewKey(w.app.AccountID, "turns:write")
	dispatcher := w.app.NewKey(w.app.AccountID, "dispatch:write")
	if r := w.app.APIWith(reader, http.MethodGet, "/turns/"+v.ID, nil); r.Status != http.StatusOK {
		t.Fatalf("turns:read reads: %d", r.Status)
	}
	d := wantError(t, w.app.APIWith(reader, http.MethodPost, "/queue-runs/"+run+"/turns", nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")
	if d["requiredScope"] != "turns:write" {
		t.Fatalf("details: %v", d)
	}
	w.app.APIWith(taker, http.MethodPost, "/queue-runs/"+run+"/turns", nil).Must(http.StatusCreated, nil)
	wantError(t, w.app.APIWith(taker, http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")
	wantError(t, w.app.APIWith(dispatcher, http.MethodPost, "/turns/"+v.ID+"/cancel", nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")
	wantError(t, w.app.APIWith(dispatcher, http.MethodGet, "/turns/"+v.ID, nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")
	w.app.APIWith(dispatcher, http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil).Must(http.StatusCreated, nil)

	_, other := w.app.NewAccount("premium", "all")
	wantError(t, w.app.APIWith(other, http.MethodGet, "/turns/"+v.ID, nil), http.StatusForbidden, "FORBIDDEN")
	wantError(t, w.app.APIWith(other, http.MethodPost, "/queue-runs/"+run+"/turns", nil), http.StatusForbidden, "FORBIDDEN")
	wantError(t, w.app.APIWith(other, http.MethodPost, "/turns/"+v.ID+"/cancel", nil), http.StatusForbidden, "FORBIDDEN")
	wantError(t, w.app.APIWith(other, http.MethodGet, "/queue-runs/"+run+"/turns", nil), http.StatusForbidden, "FORBIDDEN")
}

// waitStatus polls a turn until it has the status, or fails after d.
func (w *turnWorld) waitStatus(id string, status client.TurnStatus, d time.Duration) client.Turn {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for {
		v := w.get(id)
		if v.Status == status {
			return v
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("turn %s: want %s within %v, still %s", id, status, d, v.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestToleranceExpiresOnTheJobRunner(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		w := turnStart(t, start)
		for _, c := range []struct {
			onExpired string
			want      client.TurnStatus
		}{
			{"no_show", "NO_SHOW"}, {"cancel", "CANCELLED"}, {"hold", "HELD"},
		} {
			q := w.queue(map[string]any{"tolerance": map[string]any{"graceMinutes": 0},
				"dispatchFlow": map[string]any{"onToleranceExpired": c.onExpired}})
			v := w.take(q.Runs[0].ID, nil)
			w.app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/dispatch/next", nil).Must(http.StatusCreated, nil)
			w.waitStatus(v.ID, c.want, 20*time.Second)
		}
		// A turn that arrived in time is left alone.
		q := w.queue(map[string]any{"tolerance": map[string]any{"graceMinutes": 0}})
		v := w.take(q.Runs[0].ID, nil)
		w.op(v.ID, "arrive", nil).Must(http.StatusCreated, nil)
		w.app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/dispatch/next", nil).Must(http.StatusCreated, nil)
		time.Sleep(time.Second)
		if got := w.get(v.ID); got.Status != "CALLED" {
			t.Fatalf("arrived turn: %s", got.Status)
		}
	})
}

func TestReentryAfterNoShow(t *testing.T) {
	w := turnStart(t, apptest.Memory)
	q := w.queue(map[string]any{"tolerance": map[string]any{"graceMinutes": 5, "maxReentries": 1}})
	run := q.Runs[0].ID
	a := w.take(run, nil)
	b := w.take(run, nil)
	w.app.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil).Must(http.StatusCreated, nil)
	w.op(a.ID, "no-show", nil).Must(http.StatusCreated, nil)
	var back client.Turn
	w.op(a.ID, "arrive", nil).Must(http.StatusCreated, &back)
	if back.Status != "WAITING" || back.Reentries != 1 || back.Position == nil || *back.Position != 2 {
		t.Fatalf("re-entry: %+v", back)
	}
	if p := w.get(b.ID).Position; p == nil || *p != 1 {
		t.Fatalf("b keeps its place: %v", p)
	}
	w.op(a.ID, "call", nil).Must(http.StatusCreated, nil)
	w.op(a.ID, "no-show", nil).Must(http.StatusCreated, nil)
	wantError(t, w.op(a.ID, "arrive", nil), http.StatusConflict, "REENTRY_LIMIT_REACHED")
}

func TestReopenWindow(t *testing.T) {
	w := turnStart(t, apptest.Memory)
	q := w.queue(map[string]any{"dispatchFlow": map[string]any{"allowReopen": true}})
	v := w.take(q.Runs[0].ID, nil)
	w.op(v.ID, "cancel", nil).Must(http.StatusCreated, nil)
	var back client.Turn
	w.op(v.ID, "reopen", nil).Must(http.StatusCreated, &back)
	if back.Status != "WAITING" {
		t.Fatalf("reopen: %s", back.Status)
	}
	plain := w.queue(nil)
	u := w.take(plain.Runs[0].ID, nil)
	w.op(u.ID, "cancel", nil).Must(http.StatusCreated, nil)
	wantError(t, w.op(u.ID, "reopen", nil), http.StatusConflict, "REOPEN_NOT_ALLOWED")
	wantError(t, w.op(u.ID, "reopen", `{"x":1}`), http.StatusBadRequest, "VALIDATION_ERROR")
	_ = fmt.Sprint()
}
