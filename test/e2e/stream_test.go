package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

const streamWait = 5 * time.Second

// liveQueue is a TURN queue with one station, made through app.
type liveQueue struct {
	ID, RunID, StationID, StationLabel string
}

func newLiveQueue(t *testing.T, app *apptest.App, name string, extra map[string]any) liveQueue {
	t.Helper()
	var e client.Entity
	app.API(http.MethodPost, "/entities", map[string]any{"name": "Branch " + name}).Must(http.StatusCreated, &e)
	body := map[string]any{"entityId": e.ID, "name": name, "type": "TURN",
		"stations": []any{map[string]any{"label": "Window 2"}}}
	for k, v := range extra {
		body[k] = v
	}
	var q client.QueueView
	app.API(http.MethodPost, "/queues", body).Must(http.StatusCreated, &q)
	return liveQueue{ID: q.ID, RunID: q.Runs[0].ID, StationID: q.Stations[0].ID, StationLabel: q.Stations[0].Label}
}

// takeAndCall takes a turn in the run and calls it to the station; it
// returns the turn's id and display code.
func takeAndCall(t *testing.T, app *apptest.App, q liveQueue) (id, code string) {
	t.Helper()
	var turn struct{ ID, DisplayCode string }
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &turn)
	app.API(http.MethodPost, "/turns/"+turn.ID+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
	return turn.ID, turn.DisplayCode
}

func streamURL(app *apptest.App, query string) string {
	u := app.BaseURL + "/api/v1/events/stream"
	if query != "" {
		u += "?" + query
	}
	return u
}

func keyHeader(key string) map[string]string { return map[string]string{"X-API-Key": key} }

// TestEventStream follows a turn and a run through the stream on each
// storage: every event once, in order, as the webhook body with its event
// id as the SSE id; filtered by run; only the modules the key may read.
func TestEventStream(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := newLiveQueue(t, app, "Pharmacy", nil)
		other := newLiveQueue(t, app, "Lab", nil)

		all := openSSE(t, streamURL(app, ""), keyHeader(app.Key))
		byRun := openSSE(t, streamURL(app, "runId="+q.RunID), keyHeader(app.Key))
		turnsOnly := openSSE(t, streamURL(app, ""), keyHeader(app.NewKey(app.AccountID, "turns:read")))
		queuesOnly := openSSE(t, streamURL(app, "queueId="+q.ID), keyHeader(app.NewKey(app.AccountID, "queues:read")))

		turnID, code := takeAndCall(t, app, q)
		takeAndCall(t, app, other)
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/close", nil).Must(http.StatusCreated, nil)

		want := []struct{ event, run string }{
			{"turn.created", q.RunID}, {"turn.called", q.RunID},
			{"turn.created", other.RunID}, {"turn.called", other.RunID},
			{"queue.closed", q.RunID},
		}
		for i, w := range want {
			m := all.message(streamWait)
			if m.Event != w.event || m.Data["queueRunId"] != w.run {
				t.Fatalf("event %d: %s of run %v, want %s of %s", i, m.Event, m.Data["queueRunId"], w.event, w.run)
			}
			if m.Event == "turn.called" && w.run == q.RunID &&
				(m.Data["turnId"] != turnID || m.Data["displayCode"] != code || m.Data["stationId"] != q.StationID) {
				t.Fatalf("turn.called data %v, want turn %s code %s station %s", m.Data, turnID, code, q.StationID)
			}
		}
		all.none(300 * time.Millisecond)

		for _, w := range []string{"turn.created", "turn.called", "queue.closed"} {
			if m := byRun.message(streamWait); m.Event != w || m.Data["queueRunId"] != q.RunID {
				t.Fatalf("run filter: %s of %v, want %s", m.Event, m.Data["queueRunId"], w)
			}
		}
		byRun.none(300 * time.Millisecond)

		for i := 0; i < 4; i++ {
			if m := turnsOnly.message(streamWait); m.Event != "turn.created" && m.Event != "turn.called" {
				t.Fatalf("a turns:read key received %s", m.Event)
			}
		}
		turnsOnly.none(300 * time.Millisecond)

		if m := queuesOnly.message(streamWait); m.Event != "queue.closed" {
			t.Fatalf("a queues:read key received %s first", m.Event)
		}
		queuesOnly.none(300 * time.Millisecond)
	})
}

// TestEventStreamRefusals: a key that can read no event module is 403
// naming a scope; filters on unknown or foreign runs and queues are 404 and
// 403; a bad key is 401.
func TestEventStreamRefusals(t *testing.T) {
	app := apptest.Memory(t)
	q := newLiveQueue(t, app, "Pharmacy", nil)
	otherAcc, otherKey := app.NewAccount("premium", "all")
	_ = otherAcc

	cases := []struct {
		name, key, query string
		status           int
		code             string
	}{
		{"no event scope", app.NewKey(app.AccountID, "entities:read,webhooks:write"), "", 403, "INSUFFICIENT_SCOPE"},
		{"unknown run", app.Key, "runId=run_nope", 404, "NOT_FOUND"},
		{"unknown queue", app.Key, "queueId=que_nope", 404, "NOT_FOUND"},
		{"foreign run", otherKey, "runId=" + q.RunID, 403, "FORBIDDEN"},
		{"bad key", "qms_notakey", "", 401, "INVALID_API_KEY"},
		{"no key", "", "", 401, "UNAUTHORIZED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{}
			if c.key != "" {
				h["X-API-Key"] = c.key
			}
			resp, done := getSSE(t, streamURL(app, c.query), h)
			defer done()
			r := &apptest.Response{T: t, Status: resp.StatusCode, Header: resp.Header}
			r.Body, _ = readAll(resp)
			if r.Status != c.status || r.ErrorCode() != c.code {
				t.Fatalf("want %d %s, got %d %s", c.status, c.code, r.Status, r.Body)
			}
		})
	}
}

// TestEventStreamAcrossProcessesAndReconnect runs two processes on one
// database: a subscriber on B receives, once each and in order, the events
// committed through A and through B. Disconnected, it misses events; on
// reconnecting with Last-Event-ID (to A this time) it receives exactly
// those, then goes on live.
func TestEventStreamAcrossProcessesAndReconnect(t *testing.T) {
	url := pgtest.URL(t)
	cfg := apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 })
	a := apptest.PostgresAt(t, url, cfg)
	b := apptest.PostgresAt(t, url, cfg)
	b.AccountID, b.Key = a.AccountID, a.Key // one account, served by both
	q := newLiveQueue(t, a, "Pharmacy", nil)

	sub := openSSE(t, streamURL(b, "runId="+q.RunID), keyHeader(a.Key))
	var want []string
	for i := 0; i < 3; i++ {
		for _, app := range []*apptest.App{a, b} {
			var turn struct{ ID string }
			app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &turn)
			want = append(want, "turn.created "+turn.ID)
		}
	}
	var lastID string
	seen := map[string]bool{}
	for i, w := range want {
		m := sub.message(streamWait)
		if got := m.Event + " " + m.Data["turnId"].(string); got != w {
			t.Fatalf("event %d on B: %s, want %s", i, got, w)
		}
		if seen[m.ID] {
			t.Fatalf("event %s twice", m.ID)
		}
		seen[m.ID], lastID = true, m.ID
	}
	sub.none(500 * time.Millisecond)
	sub.Close()

	// Missed while away: three more through A.
	var missed []string
	for i := 0; i < 3; i++ {
		var turn struct{ ID string }
		a.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &turn)
		missed = append(missed, turn.ID)
	}
	again := openSSE(t, streamURL(a, "runId="+q.RunID), map[string]string{"X-API-Key": a.Key, "Last-Event-ID": lastID})
	for i, id := range missed {
		m := again.message(streamWait)
		if m.Data["turnId"] != id || seen[m.ID] {
			t.Fatalf("replayed event %d: %s %v (seen before: %v), want turn %s", i, m.Event, m.Data["turnId"], seen[m.ID], id)
		}
		seen[m.ID] = true
	}
	again.none(300 * time.Millisecond)
	// Then live, from either process.
	var turn struct{ ID string }
	b.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &turn)
	if m := again.message(streamWait); m.Data["turnId"] != turn.ID {
		t.Fatalf("live after replay: %v, want %s", m.Data["turnId"], turn.ID)
	}
}

// TestEventStreamGap: a Last-Event-ID the stream cannot resume from is
// said so in a gap event before the stream goes live.
func TestEventStreamGap(t *testing.T) {
	app := apptest.Memory(t)
	c := openSSE(t, streamURL(app, "lastEventId=evt_00000000000000000000000000"), keyHeader(app.Key))
	f := c.next(streamWait)
	if f.Event != "gap" || f.ID != "" {
		t.Fatalf("first frame %+v, want a gap event without id", f)
	}
}

func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	buf := make([]byte, 0, 512)
	tmp := make([]byte, 512)
	for {
		n, err := resp.Body.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			return buf, nil
		}
	}
}

// TestEventStreamPolling reads the same events as JSON pages, for clients
// that cannot hold a stream: the first page is empty and starts a cursor;
// later pages hold what committed since, limit at a time.
func TestEventStreamPolling(t *testing.T) {
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	q := newLiveQueue(t, app, "Pharmacy", nil)
	type page struct {
		Data    []streamMessage
		Cursor  string
		HasMore bool
		Gap     bool
	}
	var p page
	app.API(http.MethodGet, "/events/stream?runId="+q.RunID, nil).Must(http.StatusOK, &p)
	if len(p.Data) != 0 || p.Cursor == "" || p.HasMore {
		t.Fatalf("first page %+v, want empty with a cursor", p)
	}
	id1, _ := takeAndCall(t, app, q)
	var second struct{ ID string }
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &second)
	app.API(http.MethodPost, "/turns/"+second.ID+"/call", map[string]any{}).Must(http.StatusCreated, nil)
	id2 := second.ID
	var got []string
	cursor := p.Cursor
	for i := 0; i < 10; i++ {
		app.API(http.MethodGet, "/events/stream?limit=3&runId="+q.RunID+"&cursor="+cursor, nil).Must(http.StatusOK, &p)
		for _, m := range p.Data {
			got = append(got, m.Event+" "+m.Data["turnId"].(string))
		}
		cursor = p.Cursor
		if !p.HasMore {
			break
		}
	}
	want := []string{"turn.created " + id1, "turn.called " + id1, "turn.created " + id2, "turn.called " + id2}
	if len(got) != len(want) {
		t.Fatalf("polled %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("polled %v, want %v", got, want)
		}
	}
	app.API(http.MethodGet, "/events/stream?cursor="+cursor, nil).Must(http.StatusOK, &p)
	if len(p.Data) != 0 {
		t.Fatalf("polled again: %v", p.Data)
	}
	if r := app.API(http.MethodGet, "/events/stream?cursor=bogus", nil); r.Status != 400 || r.ErrorCode() != "INVALID_CURSOR" {
		t.Fatalf("bogus cursor: %d %s", r.Status, r.Body)
	}
}
