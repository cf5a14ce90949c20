package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// until returns the first event named name, skipping the others, and how
// long it took; it fails after d.
func until(t *testing.T, c *sseConn, name string, d time.Duration) (sseFrame, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		left := d - time.Since(start)
		if left <= 0 {
			t.Fatalf("no %q event within %v", name, d)
		}
		if f := c.next(left); f.Event == name {
			return f, time.Since(start)
		}
	}
}

// ended checks that the stream's connection closes within d.
func ended(t *testing.T, c *sseConn, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-c.frames:
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatalf("the stream is still open %v after its end", d)
		}
	}
}

// TestBoardRevokedAndChangedThroughEvents: revoking a display token
// through the API ends the boards it opened at once (well within a
// second, while the heartbeat is 15 s: nothing polls the token), and
// changing its options shows on them at once; the boards of another token
// of the same run see neither (issue 32: revocation reaches the streams
// as an event, not a per-stream check).
func TestBoardRevokedAndChangedThroughEvents(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t)
		q := boardQueue(t, app)
		tok, other := newDisplayToken(t, app, q.RunID), newDisplayToken(t, app, q.RunID)
		var boards []*sseConn
		for i := 0; i < 3; i++ {
			c := openSSE(t, app.BaseURL+"/display/"+tok.Token+"/events", nil)
			until(t, c, "board", 5*time.Second)
			boards = append(boards, c)
		}
		bystander := openSSE(t, app.BaseURL+"/display/"+other.Token+"/events", nil)
		until(t, bystander, "board", 5*time.Second)

		app.API(http.MethodPatch, "/display-tokens/"+tok.ID, map[string]any{"nextUp": 3}).Must(http.StatusOK, nil)
		for _, c := range boards {
			f, took := until(t, c, "board", time.Second)
			if !strings.Contains(f.Data, `"nextUp":3`) {
				t.Fatalf("the board after its options changed: %s", f.Data)
			}
			t.Logf("options changed: the board followed in %v", took.Round(time.Millisecond))
		}

		app.API(http.MethodDelete, "/display-tokens/"+tok.ID, nil).Must(http.StatusOK, nil)
		for _, c := range boards {
			f, took := until(t, c, "revoked", time.Second)
			if !strings.Contains(f.Data, "revoked") {
				t.Fatalf("revoked frame %+v", f)
			}
			ended(t, c, time.Second)
			t.Logf("revoked: the board ended in %v", took.Round(time.Millisecond))
		}
		bystander.none(500 * time.Millisecond)
		resp, done := getSSE(t, app.BaseURL+"/display/"+tok.Token+"/events", nil)
		defer done()
		if resp.StatusCode != http.StatusGone {
			t.Fatalf("reconnecting with the revoked token: %d", resp.StatusCode)
		}
		// The other token's board goes on: a call still reaches it.
		takeAndCall(t, app, q)
		until(t, bystander, "board", 2*time.Second)
	})
}

// TestBoardRevokedOnAnotherProcess: a board open on process B ends within
// a second of its token's revocation through process A: the event travels
// through the log and A's notification, as the run's events do.
func TestBoardRevokedOnAnotherProcess(t *testing.T) {
	url := pgtest.URL(t)
	a := apptest.PostgresAt(t, url)
	b := apptest.PostgresAt(t, url)
	q := boardQueue(t, a)
	tok := newDisplayToken(t, a, q.RunID)
	c := openSSE(t, b.BaseURL+"/display/"+tok.Token+"/events", nil)
	until(t, c, "board", 5*time.Second)
	a.API(http.MethodDelete, "/display-tokens/"+tok.ID, nil).Must(http.StatusOK, nil)
	_, took := until(t, c, "revoked", time.Second)
	ended(t, c, time.Second)
	t.Logf("revoked on A: the board on B ended in %v", took.Round(time.Millisecond))
}

// TestIdleBoardsReadNothing: twenty boards left idle past the old 5-s
// token check send no statement about their tokens (nor any other): an
// idle board costs the database nothing.
func TestIdleBoardsReadNothing(t *testing.T) {
	tr := &roundTrips{}
	app := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()))
	q := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)
	var boards []*sseConn
	for i := 0; i < 20; i++ {
		c := openSSE(t, app.BaseURL+"/display/"+tok.Token+"/events", nil)
		until(t, c, "board", 5*time.Second)
		boards = append(boards, c)
	}
	sent := tr.during(func() { time.Sleep(6 * time.Second) })
	for _, s := range sent {
		if strings.Contains(s, "display_tokens") {
			t.Fatalf("an idle board read its token: %s", s)
		}
	}
	for _, c := range boards {
		c.none(0)
	}
}

// TestTicketStreamEndsAtItsExpiry: a ticket page whose turn finished ends
// with "expired" when its link expires (tickets.expire_after after the
// finish), by its own timer, not at a later heartbeat (15 s).
func TestTicketStreamEndsAtItsExpiry(t *testing.T) {
	const after = 1500 * time.Millisecond
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.Tickets.ExpireAfter = after }))
		q := newLiveQueue(t, app, "Expiry", nil)
		id, _ := takeAndCall(t, app, q)
		link := newTicketLink(t, app, id, nil)
		c := openSSE(t, app.BaseURL+"/ticket/"+link.Token+"/events", nil)
		until(t, c, "ticket", 5*time.Second)
		app.API(http.MethodPost, "/turns/"+id+"/start", nil).Must(http.StatusCreated, nil)
		app.API(http.MethodPost, "/turns/"+id+"/complete", nil).Must(http.StatusCreated, nil)
		finished := time.Now()
		until(t, c, "expired", after+2*time.Second)
		took := time.Since(finished)
		if took < after-200*time.Millisecond || took > after+time.Second {
			t.Fatalf("the ticket ended %v after its turn finished; its link expires %v after", took, after)
		}
		ended(t, c, time.Second)
		t.Logf("expired %v after the finish (expire_after %v)", took.Round(time.Millisecond), after)
	})
}

// TestBoardFirstPaintFromTheRunsView: while a board of the run is open in
// the process, a board page's load and its JSON read take the board from
// the run's built view: one statement (the token's lookup), not the
// board's reads, and the page shows the latest call, options of its own
// token applied.
func TestBoardFirstPaintFromTheRunsView(t *testing.T) {
	tr := &roundTrips{}
	app := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()))
	q := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)
	var other struct{ Token string }
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/display-tokens", map[string]any{"nextUp": 2}).Must(http.StatusCreated, &other)
	open := openSSE(t, app.BaseURL+"/display/"+tok.Token+"/events", nil)
	until(t, open, "board", 5*time.Second)
	_, code := takeAndCall(t, app, q)
	for { // the group has built the board after the call
		if f, _ := until(t, open, "board", 5*time.Second); strings.Contains(f.Data, `"event":"turn.called"`) {
			break
		}
	}
	drain(open, 300*time.Millisecond)
	// The budgets' own statements (the per-token rate limit) aside.
	during := func(f func()) []string {
		var out []string
		for _, s := range tr.during(f) {
			if !strings.Contains(s, "rate_limits") {
				out = append(out, s)
			}
		}
		return out
	}

	var page *apptest.Response
	sent := during(func() { page = app.Do(http.MethodGet, "/display/"+other.Token, nil, nil) })
	if page.Status != http.StatusOK || !strings.Contains(string(page.Body), `"displayCode":"`+code+`"`) ||
		!strings.Contains(string(page.Body), `"nextUp":2`) {
		t.Fatalf("the page's first paint lacks the call of %s or its token's options: %d %s", code, page.Status, page.Body)
	}
	if len(sent) != 1 || !strings.Contains(sent[0], "display_tokens") {
		t.Fatalf("a page load sent %d statements, want the token's lookup only:\n  %s", len(sent), strings.Join(sent, "\n  "))
	}
	sent = during(func() { page = app.Do(http.MethodGet, "/display/"+other.Token+"/board", nil, nil) })
	if page.Status != http.StatusOK || len(sent) != 1 {
		t.Fatalf("the board's JSON read: %d, %d statements:\n  %s", page.Status, len(sent), strings.Join(sent, "\n  "))
	}
}

// TestTicketReconnectReadsNothing: while a ticket page's run is followed
// by this process, the page reconnecting (a storm, a phone waking) sends
// no statement: its link is remembered, its turn and its latest help
// request come from the run's view. The help request asked before the
// group started and the one asked after both show on reconnect, as a
// fresh read shows them.
func TestTicketReconnectReadsNothing(t *testing.T) {
	tr := &roundTrips{}
	app := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()),
		apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	q := newLiveQueue(t, app, "Reconnect", map[string]any{"help": map[string]any{"enabled": true, "quickReplies": []string{"On my way"}}})
	asked, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	askedLink := newTicketLink(t, app, asked, nil)
	app.Do(http.MethodPost, "/ticket/"+askedLink.Token+"/help", nil, nil).Must(http.StatusOK, nil)
	later, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	laterLink := newTicketLink(t, app, later, nil)

	keep := openSSE(t, app.BaseURL+"/ticket/"+laterLink.Token+"/events", nil) // the run's group lives while it is open
	until(t, keep, "ticket", 5*time.Second)
	app.Do(http.MethodPost, "/ticket/"+laterLink.Token+"/help", nil, nil).Must(http.StatusOK, nil)
	until(t, keep, "ticket", 5*time.Second)
	for _, token := range []string{askedLink.Token, laterLink.Token} {
		c := openSSE(t, app.BaseURL+"/ticket/"+token+"/events", nil)
		until(t, c, "ticket", 5*time.Second)
		c.Close()
	}
	drain(keep, 300*time.Millisecond)

	for _, token := range []string{askedLink.Token, laterLink.Token} {
		var f sseFrame
		var sent []string
		for _, s := range tr.during(func() {
			c := openSSE(t, app.BaseURL+"/ticket/"+token+"/events", nil)
			f, _ = until(t, c, "ticket", 5*time.Second)
			c.Close()
		}) {
			if !strings.Contains(s, "rate_limits") {
				sent = append(sent, s)
			}
		}
		if len(sent) != 0 {
			t.Fatalf("a reconnect sent %d statements:\n  %s", len(sent), strings.Join(sent, "\n  "))
		}
		_, fresh := readTicket(t, app, token)
		if fresh.Help == nil || fresh.Help.Request == nil || !strings.Contains(f.Data, `"status":"OPEN"`) {
			t.Fatalf("the reconnected ticket's help: %s (a fresh read: %+v)", f.Data, fresh.Help)
		}
	}
}
