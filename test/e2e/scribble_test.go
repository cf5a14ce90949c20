package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
)

// TestKeptRequestValuesSurviveTheirRequest: fiber's Immutable is off, so
// every value a handler reads from a request (route parameters, query,
// headers, body) points into buffers the next request reuses, and
// apptest's processes overwrite them with '#'s once each response is
// made (httpx.ScribbleRequests). Each flow here hands a use case that
// keeps it a value of its request's path, query or body (ids in the path,
// an idempotency key, names, a phone number, form answers, a stream's
// filter), then reads back, in later requests, what was kept: a value
// kept without its copy reads back as '#'s or another request's bytes, or
// the index it keys finds nothing.
func TestKeptRequestValuesSurviveTheirRequest(t *testing.T) {
	a := pfMemory(t)
	entity := pfEntity(t, a, "Scribbled")
	q := pfQueueIn(t, a, entity, map[string]any{"preAttention": map[string]any{
		"questions": []any{map[string]any{"id": "reason", "label": "Reason", "type": "text"}},
	}})
	run := q.Runs[0].ID
	// Every list and read below goes through the keeping index, so an
	// entry filed under a scribbled key is missing from it.
	get := func(path string) map[string]any {
		t.Helper()
		var out map[string]any
		a.API(http.MethodGet, path, nil).Must(http.StatusOK, &out)
		return out
	}
	items := func(path string) []map[string]any {
		t.Helper()
		var out struct{ Data []map[string]any }
		a.API(http.MethodGet, path, nil).Must(http.StatusOK, &out)
		return out.Data
	}
	same := func(what string, got any, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: read back %v, want %q", what, got, want)
		}
	}

	t.Run("station", func(t *testing.T) {
		var st client.Station
		a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": "Window 7"}).Must(http.StatusCreated, &st)
		list := items("/queues/" + q.ID + "/stations")
		found := false
		for _, s := range list {
			if s["id"] == st.ID {
				found = true
				same("station queueId", s["queueId"], q.ID)
				same("station label", s["label"], "Window 7")
			}
		}
		if !found {
			t.Errorf("station %s missing from its queue's list: %v", st.ID, list)
		}
	})

	// The stream is opened before the turn is taken: its filter (query)
	// and resume point (header) must outlive the request that opened it.
	events := openSSE(t, a.BaseURL+"/api/v1/events/stream?queueId="+q.ID+"&runId="+run,
		map[string]string{"X-API-Key": a.Key})

	var turn client.Turn
	t.Run("turn", func(t *testing.T) {
		body := map[string]any{"idempotencyKey": "scribble-key-0001", "phone": "+34600111222",
			"formResponse": map[string]string{"reason": "renew the permit"}}
		a.API(http.MethodPost, "/queue-runs/"+run+"/turns", body).Must(http.StatusCreated, &turn)
		// The replay finds the turn by the key it keeps.
		var again client.Turn
		r := a.API(http.MethodPost, "/queue-runs/"+run+"/turns", body).Must(http.StatusCreated, &again)
		same("replayed turn", again.ID, turn.ID)
		same("Idempotent-Replayed", r.Header.Get("Idempotent-Replayed"), "true")
		got := get("/turns/" + turn.ID)
		same("turn runId", got["queueRunId"], run)
		same("turn queue", got["queue"].(map[string]any)["id"], q.ID)
		form, _ := got["formResponse"].(map[string]any)
		same("turn form answer", form["reason"], "renew the permit")
		found := false
		for _, v := range items("/queue-runs/" + run + "/turns") {
			found = found || v["id"] == turn.ID
		}
		if !found {
			t.Errorf("turn %s missing from its run's list", turn.ID)
		}
		m := events.message(5 * time.Second)
		same("streamed event", m.Event, "turn.created")
	})

	t.Run("links", func(t *testing.T) {
		var dt map[string]any
		a.API(http.MethodPost, "/queue-runs/"+run+"/display-tokens", map[string]any{"label": "Lobby"}).Must(http.StatusCreated, &dt)
		for _, v := range items("/queue-runs/" + run + "/display-tokens") {
			same("display token runId", v["queueRunId"], run)
			same("display token label", v["label"], "Lobby")
		}
		var jl map[string]any
		a.API(http.MethodPost, "/queues/"+q.ID+"/join-links", map[string]any{"label": "Door"}).Must(http.StatusCreated, &jl)
		for _, v := range items("/queues/" + q.ID + "/join-links") {
			same("join link queueId", v["queueId"], q.ID)
			same("join link label", v["label"], "Door")
		}
		var cl map[string]any
		a.API(http.MethodPost, "/queues/"+q.ID+"/counter-links", map[string]any{"label": "Desk"}).Must(http.StatusCreated, &cl)
		for _, v := range items("/queues/" + q.ID + "/counter-links") {
			same("counter link queueId", v["queueId"], q.ID)
		}
		var tl map[string]any
		a.API(http.MethodPost, "/turns/"+turn.ID+"/ticket-links", nil).Must(http.StatusCreated, &tl)
		// The ticket page resolves its token from the path through a
		// cache keyed by it.
		url, _ := tl["url"].(string)
		token := url[strings.LastIndex(url, "/")+1:]
		for range 2 {
			r := a.Do(http.MethodGet, "/ticket/"+token+"/state", nil, nil)
			if r.Status != http.StatusOK {
				t.Fatalf("ticket state: %d %s", r.Status, r.Body)
			}
		}
	})

	t.Run("settings and codes", func(t *testing.T) {
		a.API(http.MethodPut, "/queues/"+q.ID+"/notifications", map[string]any{"moments": []string{"joined"}}).Must(http.StatusOK, nil)
		got := get("/queues/" + q.ID + "/notifications")
		moments, _ := got["moments"].([]any)
		if len(moments) != 1 || moments[0] != "joined" {
			t.Errorf("notification settings read back %v", got)
		}
		var code map[string]any
		a.API(http.MethodPost, "/access-codes", map[string]any{"code": "SCRIBBLE-1"}).Must(http.StatusCreated, &code)
		id, _ := code["id"].(string)
		same("access code", get("/access-codes/" + id)["code"], "SCRIBBLE-1")
		var ep map[string]any
		a.API(http.MethodPost, "/webhook-endpoints", map[string]any{"url": "http://127.0.0.1:9/scribbled-hook", "events": []string{"queue.closed"}}).
			Must(http.StatusCreated, &ep)
		for _, v := range items("/webhook-endpoints") {
			same("webhook url", v["url"], "http://127.0.0.1:9/scribbled-hook")
		}
	})

	t.Run("dispatch", func(t *testing.T) {
		var called client.Turn
		a.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil).Must(http.StatusCreated, &called)
		same("called turn", called.ID, turn.ID)
		got := get("/turns/" + turn.ID)
		same("called turn status", got["status"], "CALLED")
		same("called turn runId", got["queueRunId"], run)
	})
}
