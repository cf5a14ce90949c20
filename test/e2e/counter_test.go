package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/qms-dev/qms/adapters/http/openapi"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// counterQueue is a queue with two stations, reopen allowed, transfers on,
// a phone and a question, and a second queue it forwards to.
type counterQueue struct {
	ID, RunID          string
	Window1, Window2   string
	ToQueueID, LinkID  string
	ToRunID, QueueName string
}

func newCounterQueue(t *testing.T, app *apptest.App, name string) counterQueue {
	t.Helper()
	var e struct{ ID string }
	app.API(http.MethodPost, "/entities", map[string]any{"name": "Branch " + name}).Must(http.StatusCreated, &e)
	var q struct {
		ID       string
		Runs     []struct{ ID string }
		Stations []struct{ ID, Label string }
	}
	app.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": name, "type": "TURN",
		"stations":        []any{map[string]any{"label": "Window 1"}, map[string]any{"label": "Window 2"}},
		"dispatchFlow":    map[string]any{"allowReopen": true},
		"transferEnabled": true, "whatsappCapture": true,
		"preAttention": map[string]any{"questions": []any{
			map[string]any{"id": "reason", "label": "Reason", "type": "choice", "required": true, "options": []any{"Pickup", "Return"}},
		}},
	}).Must(http.StatusCreated, &q)
	var to struct {
		ID   string
		Runs []struct{ ID string }
	}
	app.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": name + " cashier", "type": "TURN"}).Must(http.StatusCreated, &to)
	var link struct{ ID string }
	app.API(http.MethodPost, "/queue-links", map[string]any{"fromQueueDefinitionId": q.ID, "toQueueDefinitionId": to.ID,
		"trigger": "manual"}).Must(http.StatusCreated, &link)
	w1, w2 := q.Stations[0].ID, q.Stations[1].ID
	if q.Stations[0].Label != "Window 1" {
		w1, w2 = w2, w1
	}
	return counterQueue{ID: q.ID, RunID: q.Runs[0].ID, Window1: w1, Window2: w2, ToQueueID: to.ID, LinkID: link.ID,
		ToRunID: to.Runs[0].ID, QueueName: name}
}

type counterLink struct {
	ID, QueueID, Token, URL string
	StationIDs              []string
	ShowDetails             bool
	Language                *string
	RevokedAt               *string
}

func newCounterLink(t *testing.T, app *apptest.App, queueID string, body map[string]any) counterLink {
	t.Helper()
	var l counterLink
	app.API(http.MethodPost, "/queues/"+queueID+"/counter-links", body).Must(http.StatusCreated, &l)
	return l
}

type consoleRow struct {
	ID, DisplayCode, Status, Priority string
	Position                          *int
	Station                           *struct{ ID, Label string }
	Phone                             *string
	FormResponse                      map[string]string
}

type consoleView struct {
	Link     struct{ ID string }
	Queue    struct{ Name string }
	Stations []struct {
		ID, Label string
		TurnID    *string
	}
	Forward                                              []struct{ LinkID, QueueName string }
	Waiting, Held, Called, InService, Waitlisted, Finish []consoleRow
}

type pressAnswer struct {
	Result struct {
		Action   string
		Replayed bool
		Turn     *struct{ ID, DisplayCode, Status string }
	}
	Console consoleView
}

// press sends one press of the console.
func press(app *apptest.App, token string, body map[string]any) (*apptest.Response, pressAnswer) {
	r := app.Do(http.MethodPost, "/counter/"+token+"/press", body, nil)
	var a pressAnswer
	if r.Status < 300 {
		r.Decode(&a)
	}
	return r, a
}

func readConsole(t *testing.T, app *apptest.App, token string) consoleView {
	t.Helper()
	var c consoleView
	app.Do(http.MethodGet, "/counter/"+token+"/state", nil, nil).Must(http.StatusOK, &c)
	return c
}

// TestCounterLinks makes counter links through the API and works a queue
// through them, on each storage: the value is shown once and only its
// hash kept; the console reads the line without customer details unless
// the link shows them; a press is done once per key (a repeat replays it,
// another body with the key is refused); the link's stations bound what
// it may do; a turn of another queue is not there for it; every event it
// raises names the link and the station, and the presses are the turn's
// history; revoked, everything refuses it.
func TestCounterLinks(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := newCounterQueue(t, app, "Parcels")
		other := newCounterQueue(t, app, "Elsewhere")

		l := newCounterLink(t, app, q.ID, map[string]any{"label": "Desk A", "language": "es"})
		if !strings.HasPrefix(l.Token, "qmsc_") || l.URL != app.BaseURL+"/counter/"+l.Token || l.QueueID != q.ID ||
			l.ShowDetails || len(l.StationIDs) != 0 || l.Language == nil || *l.Language != "es" {
			t.Fatalf("link %+v", l)
		}
		var page struct{ Data []map[string]any }
		app.API(http.MethodGet, "/queues/"+q.ID+"/counter-links", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 || page.Data[0]["id"] != l.ID || page.Data[0]["token"] != nil {
			t.Fatalf("list %+v", page.Data)
		}
		pfErr(t, app.API(http.MethodPost, "/queues/"+q.ID+"/counter-links", map[string]any{"stationIds": []any{other.Window1}}),
			400, "VALIDATION_ERROR")
		pfErr(t, app.API(http.MethodPost, "/queues/"+q.ID+"/counter-links", map[string]any{"language": "de"}), 400, "VALIDATION_ERROR")
		pfErr(t, app.API(http.MethodPost, "/queues/"+q.ID+"/counter-links", map[string]any{"showDetails": "yes"}), 400, "VALIDATION_ERROR")
		readOnly := app.NewKey(app.AccountID, "queues:read,turns:read")
		pfErr(t, app.APIWith(readOnly, http.MethodPost, "/queues/"+q.ID+"/counter-links", nil), 403, "INSUFFICIENT_SCOPE")

		var first, second struct{ ID, DisplayCode string }
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{"phone": "+5511999990000",
			"formResponse": map[string]any{"reason": "Pickup"}}).Must(http.StatusCreated, &first)
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{"formResponse": map[string]any{"reason": "Return"}}).Must(http.StatusCreated, &second)

		// The console: the line, without details.
		c := readConsole(t, app, l.Token)
		if c.Queue.Name != "Parcels" || len(c.Waiting) != 2 || c.Waiting[0].ID != first.ID || len(c.Stations) != 2 ||
			len(c.Forward) != 1 || c.Forward[0].LinkID != q.LinkID {
			t.Fatalf("console %+v", c)
		}
		raw := app.Do(http.MethodGet, "/counter/"+l.Token+"/state", nil, nil)
		if strings.Contains(string(raw.Body), "+5511999990000") || strings.Contains(string(raw.Body), "formResponse") {
			t.Fatalf("a link without showDetails shows details: %s", raw.Body)
		}
		detailed := newCounterLink(t, app, q.ID, map[string]any{"showDetails": true})
		dc := readConsole(t, app, detailed.Token)
		if dc.Waiting[0].Phone == nil || dc.Waiting[0].FormResponse["reason"] != "Pickup" {
			t.Fatalf("a link with showDetails hides them: %+v", dc.Waiting[0])
		}

		// The events from here on.
		cursor := eventCursor(t, app, q.RunID)

		// next, twice with one key: one call.
		key := "press-0000000001"
		r, a := press(app, l.Token, map[string]any{"key": key, "action": "next", "stationId": q.Window1})
		if r.Status != http.StatusCreated || a.Result.Replayed || a.Result.Turn == nil || a.Result.Turn.ID != first.ID ||
			a.Result.Turn.Status != "CALLED" || len(a.Console.Called) != 1 {
			t.Fatalf("next: %d %s", r.Status, r.Body)
		}
		r, a = press(app, l.Token, map[string]any{"key": key, "action": "next", "stationId": q.Window1})
		if r.Status != http.StatusOK || !a.Result.Replayed || a.Result.Turn.ID != first.ID || len(a.Console.Called) != 1 || len(a.Console.Waiting) != 1 {
			t.Fatalf("the repeat of a press: %d %s", r.Status, r.Body)
		}
		r, _ = press(app, l.Token, map[string]any{"key": key, "action": "next", "stationId": q.Window2})
		pfErr(t, r, 409, "PRESS_KEY_REUSED")

		// Bad presses name their field.
		r, _ = press(app, l.Token, map[string]any{"key": "short", "action": "next"})
		pfErr(t, r, 400, "VALIDATION_ERROR")
		r, _ = press(app, l.Token, map[string]any{"key": "press-0000000002", "action": "dance"})
		pfErr(t, r, 400, "VALIDATION_ERROR")
		r, _ = press(app, l.Token, map[string]any{"key": "press-0000000003", "action": "complete"})
		pfErr(t, r, 400, "VALIDATION_ERROR")

		// start, complete with the same flow as the API.
		mustPress(t, app, l.Token, "press-0000000004", "start", first.ID, q.Window1, nil)
		mustPress(t, app, l.Token, "press-0000000005", "complete", first.ID, q.Window1, nil)
		mustPress(t, app, l.Token, "press-0000000006", "reopen", first.ID, q.Window1, nil)
		mustPress(t, app, l.Token, "press-0000000007", "complete", first.ID, q.Window1, nil)

		// A turn of another queue of the account is not there for it.
		var foreign struct{ ID string }
		app.API(http.MethodPost, "/queue-runs/"+other.RunID+"/turns", map[string]any{"formResponse": map[string]any{"reason": "Pickup"}}).Must(http.StatusCreated, &foreign)
		for _, act := range []string{"call", "hold", "cancel", "arrive"} {
			r, _ = press(app, l.Token, map[string]any{"key": "press-foreign-" + act, "action": act, "turnId": foreign.ID, "stationId": q.Window1})
			pfErr(t, r, 404, "NOT_FOUND")
		}
		pfErr(t, app.Do(http.MethodGet, "/counter/"+l.Token+"/turns/"+foreign.ID+"/presses", nil, nil), 404, "NOT_FOUND")
		var fv struct{ Status string }
		app.API(http.MethodGet, "/turns/"+foreign.ID, nil).Must(http.StatusOK, &fv)
		if fv.Status != "WAITING" {
			t.Fatalf("a refused press changed another queue's turn: %s", fv.Status)
		}

		// A link bound to Window 2 acts for Window 2 only.
		w2 := newCounterLink(t, app, q.ID, map[string]any{"stationIds": []any{q.Window2}})
		if len(w2.StationIDs) != 1 || len(readConsole(t, app, w2.Token).Stations) != 1 {
			t.Fatalf("station-bound link %+v", w2)
		}
		r, _ = press(app, w2.Token, map[string]any{"key": "press-w2-000001", "action": "next", "stationId": q.Window1})
		pfErr(t, r, 403, "STATION_NOT_ALLOWED")
		r, _ = press(app, w2.Token, map[string]any{"key": "press-w2-000002", "action": "next"})
		pfErr(t, r, 422, "STATION_REQUIRED")
		r, a = press(app, w2.Token, map[string]any{"key": "press-w2-000003", "action": "next", "stationId": q.Window2})
		if r.Status != http.StatusCreated || a.Result.Turn.ID != second.ID {
			t.Fatalf("next at Window 2: %d %s", r.Status, r.Body)
		}
		// The first link may not hold Window 2's turn? It may: it acts for
		// every station. The bound link may not touch a turn at Window 1.
		mustPress(t, app, l.Token, "press-0000000008", "call", second.ID, q.Window2, nil)

		// A walk-in with the queue's questions; a repeat finds the same turn.
		walk := map[string]any{"key": "press-walk-00001", "action": "walk-in", "stationId": q.Window1,
			"walkIn": map[string]any{"peopleCount": 2, "formResponse": map[string]any{"reason": "Return"}}}
		r, a = press(app, l.Token, walk)
		if r.Status != http.StatusCreated || a.Result.Turn == nil || a.Result.Turn.Status != "WAITING" {
			t.Fatalf("walk-in: %d %s", r.Status, r.Body)
		}
		walkID := a.Result.Turn.ID
		r, a = press(app, l.Token, walk)
		if r.Status != http.StatusOK || !a.Result.Replayed || a.Result.Turn.ID != walkID {
			t.Fatalf("walk-in repeat: %d %s", r.Status, r.Body)
		}
		r, _ = press(app, l.Token, map[string]any{"key": "press-walk-00002", "action": "walk-in", "walkIn": map[string]any{}})
		pfErr(t, r, 400, "VALIDATION_ERROR") // the required question

		// hold, release, priority, forward.
		mustPress(t, app, l.Token, "press-0000000009", "hold", walkID, "", nil)
		mustPress(t, app, l.Token, "press-0000000010", "release", walkID, "", nil)
		mustPress(t, app, l.Token, "press-0000000011", "priority", walkID, "", map[string]any{"priority": "HIGH"})
		a = mustPress(t, app, l.Token, "press-0000000012", "forward", walkID, q.Window1, map[string]any{"linkId": q.LinkID})
		if a.Result.Turn.Status != "CANCELLED" {
			t.Fatalf("a forwarded turn stays in this line: %+v", a.Result.Turn)
		}
		var dest struct{ Data []struct{ Status string } }
		app.API(http.MethodGet, "/queue-runs/"+q.ToRunID+"/turns", nil).Must(http.StatusOK, &dest)
		if len(dest.Data) != 1 || dest.Data[0].Status != "WAITING" {
			t.Fatalf("the forward made %+v in the destination", dest.Data)
		}

		// Events name the link and the station.
		evs := eventsAfter(t, app, q.RunID, cursor)
		var calledBy, createdBy int
		for _, e := range evs {
			actor, _ := e.Data["actor"].(map[string]any)
			if e.Event == "turn.called" && e.Data["turnId"] == first.ID {
				if actor == nil || actor["type"] != "counter" || actor["id"] != l.ID || actor["stationId"] != q.Window1 {
					t.Fatalf("turn.called without its actor: %+v", e.Data)
				}
				calledBy++
			}
			if e.Event == "turn.called" && e.Data["turnId"] == second.ID && (actor == nil || actor["id"] == nil) {
				t.Fatalf("turn.called without its actor: %+v", e.Data)
			}
			if e.Event == "turn.created" && e.Data["turnId"] == walkID {
				if actor == nil || actor["id"] != l.ID {
					t.Fatalf("turn.created of a walk-in without its actor: %+v", e.Data)
				}
				createdBy++
			}
		}
		if calledBy != 1 || createdBy != 1 {
			t.Fatalf("turn.called by the link %d times, walk-in created %d times, want 1 and 1 (events %+v)", calledBy, createdBy, evs)
		}

		// The turn's history at the counters.
		var hist struct {
			Data []struct {
				LinkID, Action string
				StationID      *string
				TurnID         *string
			}
		}
		app.API(http.MethodGet, "/turns/"+first.ID+"/counter-presses", nil).Must(http.StatusOK, &hist)
		var acts []string
		for _, p := range hist.Data {
			if p.LinkID != l.ID || p.StationID == nil || *p.StationID != q.Window1 || p.TurnID == nil || *p.TurnID != first.ID {
				t.Fatalf("press %+v", p)
			}
			acts = append(acts, p.Action)
		}
		if strings.Join(acts, ",") != "next,start,complete,reopen,complete" {
			t.Fatalf("history %v", acts)
		}
		var ph struct{ Data []struct{ Action string } }
		app.Do(http.MethodGet, "/counter/"+l.Token+"/turns/"+first.ID+"/presses", nil, nil).Must(http.StatusOK, &ph)
		if len(ph.Data) != 5 {
			t.Fatalf("the console's history %+v", ph.Data)
		}

		// Revoked: the page, the state, a press and the stream refuse it.
		var rv counterLink
		app.API(http.MethodDelete, "/counter-links/"+l.ID, nil).Must(http.StatusOK, &rv)
		if rv.RevokedAt == nil {
			t.Fatalf("revoke %+v", rv)
		}
		app.API(http.MethodDelete, "/counter-links/"+l.ID, nil).Must(http.StatusOK, nil)
		pfErr(t, app.Do(http.MethodGet, "/counter/"+l.Token+"/state", nil, nil), 410, "COUNTER_LINK_REVOKED")
		r, _ = press(app, l.Token, map[string]any{"key": "press-0000000099", "action": "next", "stationId": q.Window1})
		pfErr(t, r, 410, "COUNTER_LINK_REVOKED")
		if p := app.Do(http.MethodGet, "/counter/"+l.Token, nil, nil); p.Status != 410 || !strings.Contains(string(p.Body), "revoked") {
			t.Fatalf("revoked page: %d %s", p.Status, p.Body)
		}
		pfErr(t, app.Do(http.MethodGet, "/counter/"+l.Token+"/events", nil, nil), 410, "COUNTER_LINK_REVOKED")
		pfErr(t, app.Do(http.MethodGet, "/counter/qmsc_"+strings.Repeat("a", 32)+"/state", nil, nil), 404, "INVALID_COUNTER_LINK")
		if p := app.Do(http.MethodGet, "/counter/nonsense", nil, nil); p.Status != 404 {
			t.Fatalf("unknown page: %d", p.Status)
		}

		// Another account cannot revoke or list them.
		otherAcc, otherKey := app.NewAccount("premium", "all")
		_ = otherAcc
		pfErr(t, app.APIWith(otherKey, http.MethodDelete, "/counter-links/"+w2.ID, nil), 403, "FORBIDDEN")
		pfErr(t, app.APIWith(otherKey, http.MethodGet, "/queues/"+q.ID+"/counter-links", nil), 403, "FORBIDDEN")
	})
}

// mustPress presses and wants it done (201).
func mustPress(t *testing.T, app *apptest.App, token, key, action, turnID, stationID string, extra map[string]any) pressAnswer {
	t.Helper()
	body := map[string]any{"key": key, "action": action, "turnId": turnID}
	if stationID != "" {
		body["stationId"] = stationID
	}
	for k, v := range extra {
		body[k] = v
	}
	r, a := press(app, token, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("%s %s: %d %s", action, turnID, r.Status, r.Body)
	}
	return a
}

type polledEvent struct {
	Event string
	Data  map[string]any
}

func eventCursor(t *testing.T, app *apptest.App, runID string) string {
	t.Helper()
	var p struct{ Cursor string }
	app.API(http.MethodGet, "/events/stream?runId="+runID, nil).Must(http.StatusOK, &p)
	return p.Cursor
}

func eventsAfter(t *testing.T, app *apptest.App, runID, cursor string) []polledEvent {
	t.Helper()
	var out []polledEvent
	for {
		var p struct {
			Data    []polledEvent
			Cursor  string
			HasMore bool
		}
		app.API(http.MethodGet, "/events/stream?runId="+runID+"&limit=100&cursor="+cursor, nil).Must(http.StatusOK, &p)
		out = append(out, p.Data...)
		cursor = p.Cursor
		if !p.HasMore {
			return out
		}
	}
}

// TestCounterTokenOpensNothingElse presents a live counter link's token to
// every operation of the API, as a bearer key and as X-API-Key, and to the
// other keyless pages: each refuses it. The token works its own console
// only.
func TestCounterTokenOpensNothingElse(t *testing.T) {
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	q := newCounterQueue(t, app, "Locked")
	l := newCounterLink(t, app, q.ID, map[string]any{})
	doc, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("{queueId}", q.ID, "{runId}", q.RunID, "{stationId}", q.Window1, "{linkId}", q.LinkID,
		"{turnId}", "trn_x", "{tokenId}", "dsp_x", "{id}", "x", "{entityId}", "ent_x", "{keyId}", "key_x",
		"{endpointId}", "whe_x", "{deliveryId}", "dlv_x", "{accountId}", "acc_x", "{codeId}", "acd_x",
		"{appointmentId}", "apt_x", "{slotId}", "slt_x")
	tried := 0
	for path, ops := range d.Paths {
		if !strings.HasPrefix(path, "/api/") && !strings.HasPrefix(path, "/admin/") {
			continue
		}
		for method, raw := range ops {
			m := strings.ToUpper(method)
			if m != "GET" && m != "POST" && m != "PUT" && m != "PATCH" && m != "DELETE" {
				continue
			}
			var op struct {
				Security *[]any `json:"security"`
			}
			_ = json.Unmarshal(raw, &op)
			if op.Security != nil && len(*op.Security) == 0 {
				continue // public: the document, the health checks
			}
			admin := strings.HasPrefix(path, "/admin/")
			url := fill.Replace(path)
			url = strings.NewReplacer("{", "", "}", "").Replace(url)
			for _, h := range []map[string]string{{"Authorization": "Bearer " + l.Token}, {"X-API-Key": l.Token}} {
				r := app.Do(m, url, map[string]any{}, h)
				// The admin API counts failed authentications by address and
				// refuses them all (429) past its budget: a refusal too.
				if r.Status != http.StatusUnauthorized && !(admin && r.Status == http.StatusTooManyRequests) {
					t.Errorf("%s %s with the counter token (%v): %d %.200s, want 401", m, url, keysOf(h), r.Status, r.Body)
				}
			}
			tried++
		}
	}
	if tried < 60 {
		t.Fatalf("only %d operations tried", tried)
	}
	for _, p := range []string{"/display/" + l.Token, "/display/" + l.Token + "/board", "/ticket/" + l.Token + "/state",
		"/ticket/" + l.Token + "/events", "/display/" + l.Token + "/events"} {
		if r := app.Do(http.MethodGet, p, nil, nil); r.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, r.Status)
		}
	}
	if r := app.Do(http.MethodPost, "/ticket/"+l.Token+"/leave", nil, nil); r.Status != http.StatusNotFound {
		t.Errorf("POST /ticket/{counter token}/leave: %d, want 404", r.Status)
	}
	// And its own console still works.
	readConsole(t, app, l.Token)
}

func keysOf(h map[string]string) string {
	for k := range h {
		return k
	}
	return ""
}

// TestCounterPressesRace has two counters press at once on PostgreSQL (and
// memory): presses with their own keys call different turns, never one
// twice; ten copies of one press (a double click, retries) call one turn.
func TestCounterPressesRace(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := newCounterQueue(t, app, "Race")
		a := newCounterLink(t, app, q.ID, map[string]any{"stationIds": []any{q.Window1}})
		b := newCounterLink(t, app, q.ID, map[string]any{"stationIds": []any{q.Window2}})
		const turns = 12
		for i := 0; i < turns; i++ {
			app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{"formResponse": map[string]any{"reason": "Pickup"}}).Must(http.StatusCreated, nil)
		}
		// Rounds: both counters press next at once, then complete.
		called := map[string]string{}
		var mu sync.Mutex
		for round := 0; round < turns/2; round++ {
			var wg sync.WaitGroup
			for _, c := range []struct {
				tok, st string
			}{{a.Token, q.Window1}, {b.Token, q.Window2}} {
				wg.Add(1)
				go func(tok, st string) {
					defer wg.Done()
					r, ans := press(app, tok, map[string]any{"key": fmt.Sprintf("race-%s-%d", st, round), "action": "next", "stationId": st})
					if r.Status != http.StatusCreated {
						t.Errorf("next at %s: %d %s", st, r.Status, r.Body)
						return
					}
					mu.Lock()
					if prev, dup := called[ans.Result.Turn.ID]; dup {
						t.Errorf("turn %s called by %s and %s", ans.Result.Turn.ID, prev, st)
					}
					called[ans.Result.Turn.ID] = st
					mu.Unlock()
					// Served at once (trackService: start, then complete).
					mustPress(t, app, tok, fmt.Sprintf("race-start-%s-%d", st, round), "start", ans.Result.Turn.ID, st, nil)
					mustPress(t, app, tok, fmt.Sprintf("race-done-%s-%d", st, round), "complete", ans.Result.Turn.ID, st, nil)
				}(c.tok, c.st)
			}
			wg.Wait()
		}
		if len(called) != turns {
			t.Fatalf("%d turns called, want %d", len(called), turns)
		}
		// Ten copies of one press: one call.
		for i := 0; i < 2; i++ {
			app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{"formResponse": map[string]any{"reason": "Pickup"}}).Must(http.StatusCreated, nil)
		}
		var wg sync.WaitGroup
		var mu2 sync.Mutex
		ids := map[string]int{}
		statuses := map[int]int{}
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, ans := press(app, a.Token, map[string]any{"key": "double-click-0001", "action": "next", "stationId": q.Window1})
				mu2.Lock()
				defer mu2.Unlock()
				statuses[r.Status]++
				if r.Status < 300 {
					ids[ans.Result.Turn.ID]++
				}
			}()
		}
		wg.Wait()
		if len(ids) != 1 || statuses[http.StatusCreated] != 1 || statuses[http.StatusOK] != 9 {
			t.Fatalf("ten copies of one press: turns %v, statuses %v", ids, statuses)
		}
		c := readConsole(t, app, a.Token)
		if len(c.Called) != 1 || len(c.Waiting) != 1 {
			t.Fatalf("after ten copies of one press: called %d, waiting %d", len(c.Called), len(c.Waiting))
		}
	})
}
