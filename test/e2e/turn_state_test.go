package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/test/apptest"
)

// A change of a turn that raises no event of the spec (hold, release,
// start, ...) raises the internal turn_state.changed in its transaction
// (docs/architecture.md, "Internal events"): the screens hear it as they
// hear the spec's events, and no client ever does.

// TestInternalEventsReachNoClient: a hold and a release, on a queue whose
// account has a webhook endpoint subscribed to every event and an open
// /events stream (and a poll of it), reach neither: the stream sends
// turn.created then turn.cancelled, nothing in between, and the endpoint
// is sent those two only.
func TestInternalEventsReachNoClient(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		rc := newWhReceiver(t, whStatic(http.StatusOK))
		whEndpoint(t, app, rc.URL(), events.Names()...)
		q := newLiveQueue(t, app, "Internal", nil)
		cursor := eventCursor(t, app, q.RunID)
		live := openSSE(t, streamURL(app, "runId="+q.RunID), map[string]string{"X-API-Key": app.Key})

		id, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
		app.API(http.MethodPost, "/turns/"+id+"/hold", nil).Must(http.StatusCreated, nil)
		app.API(http.MethodPost, "/turns/"+id+"/release", nil).Must(http.StatusCreated, nil)
		app.API(http.MethodPost, "/turns/"+id+"/cancel", nil).Must(http.StatusCreated, nil)

		for _, want := range []string{"turn.created", "turn.cancelled"} {
			if m := live.message(5 * time.Second); m.Event != want {
				t.Fatalf("the stream sent %s, want %s", m.Event, want)
			}
		}
		live.none(500 * time.Millisecond)
		var polled []string
		for _, e := range eventsAfter(t, app, q.RunID, cursor) {
			polled = append(polled, e.Event)
		}
		if !slices.Equal(polled, []string{"turn.created", "turn.cancelled"}) {
			t.Fatalf("the poll sent %v", polled)
		}
		// The queue's creation opened its run: queue.opened, then the
		// turn's two spec events; the hold and the release, nothing.
		want := []string{"queue.opened", "turn.cancelled", "turn.created"}
		rc.wait(t, len(want), 10*time.Second)
		time.Sleep(500 * time.Millisecond)
		var sent []string
		for _, h := range rc.Hits() {
			var b struct{ Event string }
			if err := json.Unmarshal(h.Body, &b); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, b.Event)
		}
		var logged []string
		for _, d := range whLog(t, app) {
			logged = append(logged, string(d.Event))
		}
		slices.Sort(sent)
		slices.Sort(logged)
		if !slices.Equal(sent, want) || !slices.Equal(logged, want) {
			t.Fatalf("the endpoint was sent %v, its log holds %v; want %v", sent, logged, want)
		}
	})
}

// ticketAhead reads a ticket frame's "ahead".
func ticketAhead(t *testing.T, f sseFrame) *int {
	t.Helper()
	var m struct {
		Ticket struct{ Ahead *int }
	}
	if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
		t.Fatalf("ticket frame %s: %v", f.Data, err)
	}
	return m.Ticket.Ahead
}

// TestHoldAheadMovesTheTicket: when the clerk holds the turn ahead, the
// other customer's ticket page shows it one place nearer within a second,
// and its board shows one turn fewer waiting; a release puts both back.
// Before turn_state.changed neither heard a hold before the next spec
// event.
func TestHoldAheadMovesTheTicket(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := newLiveQueue(t, app, "Hold ahead", nil)
		ahead, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
		mine, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
		page := openSSE(t, app.BaseURL+"/ticket/"+newTicketLink(t, app, mine, nil).Token+"/events", nil)
		f, _ := until(t, page, "ticket", 5*time.Second)
		if a := ticketAhead(t, f); a == nil || *a != 1 {
			t.Fatalf("ahead %v before the hold, want 1", a)
		}
		board := openSSE(t, app.BaseURL+"/display/"+newDisplayToken(t, app, q.RunID).Token+"/events", nil)
		until(t, board, "board", 5*time.Second)

		app.API(http.MethodPost, "/turns/"+ahead+"/hold", nil).Must(http.StatusCreated, nil)
		f, took := until(t, page, "ticket", time.Second)
		if a := ticketAhead(t, f); a == nil || *a != 0 {
			t.Fatalf("ahead %v after the hold, want 0", a)
		}
		t.Logf("hold: the ticket moved in %v", took.Round(time.Millisecond))
		f, took = until(t, board, "board", time.Second)
		var b struct {
			Board   boardView
			Trigger *struct{ Event string }
		}
		if err := json.Unmarshal([]byte(f.Data), &b); err != nil || b.Board.Waiting.Count != 1 || b.Trigger != nil {
			t.Fatalf("board after the hold: %s (%v)", f.Data, err)
		}
		t.Logf("hold: the board followed in %v", took.Round(time.Millisecond))

		app.API(http.MethodPost, "/turns/"+ahead+"/release", nil).Must(http.StatusCreated, nil)
		f, _ = until(t, page, "ticket", time.Second)
		if a := ticketAhead(t, f); a == nil || *a != 1 {
			t.Fatalf("ahead %v after the release, want 1", a)
		}
	})
}

// TestConsoleHearsAHold: a hold made elsewhere (the API, another counter)
// reaches an open console within a second, as an event, not at its next
// re-read.
func TestConsoleHearsAHold(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := newLiveQueue(t, app, "Console hold", nil)
		id, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
		l := newCounterLink(t, app, q.ID, map[string]any{})
		c := openSSE(t, app.BaseURL+"/counter/"+l.Token+"/events", nil)
		until(t, c, "console", 5*time.Second)
		app.API(http.MethodPost, "/turns/"+id+"/hold", nil).Must(http.StatusCreated, nil)
		f, took := until(t, c, "console", time.Second)
		var m struct{ Console consoleView }
		if err := json.Unmarshal([]byte(f.Data), &m); err != nil || len(m.Console.Held) != 1 || m.Console.Held[0].ID != id ||
			len(m.Console.Waiting) != 0 {
			t.Fatalf("console after the hold: %s (%v)", f.Data, err)
		}
		t.Logf("hold: the console followed in %v", took.Round(time.Millisecond))
	})
}

// TestIdleConsolesSendNothing: ten consoles left idle over three 2-s
// heartbeats send no statement (they re-read their line only on an event
// of their queue, or after counterhttp.Options.Resync, 30 s, without
// one). Before, the heartbeat re-read it: 334 statements for ten consoles
// over 6.5 s.
func TestIdleConsolesSendNothing(t *testing.T) {
	tr := &roundTrips{}
	app := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()))
	q := newLiveQueue(t, app, "Idle consoles", nil)
	takeTicketTurn(t, app, q.RunID, map[string]any{})
	l := newCounterLink(t, app, q.ID, map[string]any{})
	for range 10 {
		c := openSSE(t, app.BaseURL+"/counter/"+l.Token+"/events", nil)
		until(t, c, "console", 5*time.Second)
	}
	sent := tr.during(func() { time.Sleep(6500 * time.Millisecond) })
	var ours []string
	for _, s := range sent {
		// The event feed's read (an event's announcement that came in
		// while the consoles opened) is the hub's, not a console's.
		if !strings.Contains(s, "FROM events") {
			ours = append(ours, s)
		}
	}
	if len(ours) > 0 {
		t.Fatalf("idle consoles sent %d statements, first %s", len(ours), ours[0])
	}
	t.Logf("%d statements from ten idle consoles over 6.5 s (none of theirs)", len(sent))
}

// TestConsolesShareAReadPerChange: the open consoles of a queue, whatever
// their links, share one read of the queue per change (counterhttp's
// sharedReads), and each still shows its own link's console: the
// customer's phone only where the link shows details, only the stations
// the link may act for.
func TestConsolesShareAReadPerChange(t *testing.T) {
	tr := &roundTrips{}
	app := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()),
		apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	q := newLiveQueue(t, app, "Shared reads", map[string]any{
		"stations": []any{map[string]any{"label": "Window 1"}, map[string]any{"label": "Window 2"}}})
	id, _ := takeTicketTurn(t, app, q.RunID, map[string]any{"phone": "+5511999990000"})
	bodies := []map[string]any{{}, {"showDetails": true}, {"stationIds": []string{q.StationID}}, {}, {"showDetails": true}}
	type console struct {
		c     *sseConn
		body  map[string]any
		links counterLink
	}
	var cs []console
	for _, b := range bodies {
		l := newCounterLink(t, app, q.ID, b)
		for range 2 {
			c := openSSE(t, app.BaseURL+"/counter/"+l.Token+"/events", nil)
			until(t, c, "console", 5*time.Second)
			cs = append(cs, console{c, b, l})
		}
	}
	sent := tr.during(func() {
		app.API(http.MethodPost, "/turns/"+id+"/hold", nil).Must(http.StatusCreated, nil)
		for _, c := range cs {
			f, _ := until(t, c.c, "console", time.Second)
			var m struct{ Console consoleView }
			if err := json.Unmarshal([]byte(f.Data), &m); err != nil || len(m.Console.Held) != 1 {
				t.Fatalf("console of %v after the hold: %s (%v)", c.body, f.Data, err)
			}
			if details := m.Console.Held[0].Phone != nil; details != (c.body["showDetails"] == true) {
				t.Fatalf("console of %v shows the phone: %v", c.body, details)
			}
			if want := 2; c.body["stationIds"] != nil {
				want = 1
				if len(m.Console.Stations) != want {
					t.Fatalf("console of %v has %d stations", c.body, len(m.Console.Stations))
				}
			} else if len(m.Console.Stations) != want {
				t.Fatalf("console of %v has %d stations", c.body, len(m.Console.Stations))
			}
		}
	})
	var lists int
	for _, s := range sent {
		if strings.Contains(s, `"turn_row"`) { // the console's list of the line
			lists++
		}
	}
	// One read of the line for ten consoles; each console reading its own
	// was ten.
	if lists > 1 {
		for _, s := range sent {
			t.Log(s[:min(len(s), 200)])
		}
		t.Fatalf("%d reads of the turns for one hold and ten consoles", lists)
	}
	t.Logf("one hold, ten consoles of five links: %d statements, %d reading turns", len(sent), lists)
}
