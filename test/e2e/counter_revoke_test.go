package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestConsoleRevokedThroughEvents: revoking a counter link ends the
// consoles it opened at once (well within a second; before, the console
// re-read its link at every 2-s heartbeat), and the consoles of another
// link of the same queue go on, sent nothing for it; reconnecting with
// the revoked link is 410.
func TestConsoleRevokedThroughEvents(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t)
		q := newCounterQueue(t, app, "Revoke")
		l, other := newCounterLink(t, app, q.ID, map[string]any{}), newCounterLink(t, app, q.ID, map[string]any{})
		var consoles []*sseConn
		for range 3 {
			c := openSSE(t, app.BaseURL+"/counter/"+l.Token+"/events", nil)
			until(t, c, "console", 5*time.Second)
			consoles = append(consoles, c)
		}
		bystander := openSSE(t, app.BaseURL+"/counter/"+other.Token+"/events", nil)
		until(t, bystander, "console", 5*time.Second)

		app.API(http.MethodDelete, "/counter-links/"+l.ID, nil).Must(http.StatusOK, nil)
		for _, c := range consoles {
			f, took := until(t, c, "revoked", time.Second)
			if !strings.Contains(f.Data, "revoked") {
				t.Fatalf("revoked frame %+v", f)
			}
			ended(t, c, time.Second)
			t.Logf("revoked: the console ended in %v", took.Round(time.Millisecond))
		}
		bystander.none(500 * time.Millisecond)
		resp, done := getSSE(t, app.BaseURL+"/counter/"+l.Token+"/events", nil)
		defer done()
		if resp.StatusCode != http.StatusGone {
			t.Fatalf("reconnecting with the revoked link: %d", resp.StatusCode)
		}
	})
}

// TestConsoleRevokedOnAnotherProcess: a console open on process B ends
// within a second of its link's revocation through process A: the event
// travels through the log, as the queue's turn events do.
func TestConsoleRevokedOnAnotherProcess(t *testing.T) {
	url := pgtest.URL(t)
	a := apptest.PostgresAt(t, url)
	b := apptest.PostgresAt(t, url)
	q := newCounterQueue(t, a, "Revoke elsewhere")
	l := newCounterLink(t, a, q.ID, map[string]any{})
	c := openSSE(t, b.BaseURL+"/counter/"+l.Token+"/events", nil)
	until(t, c, "console", 5*time.Second)
	a.API(http.MethodDelete, "/counter-links/"+l.ID, nil).Must(http.StatusOK, nil)
	_, took := until(t, c, "revoked", time.Second)
	ended(t, c, time.Second)
	t.Logf("revoked on A: the console on B ended in %v", took.Round(time.Millisecond))
}

// TestIdleConsolesReadNoLink: ten consoles left idle over three 2-s
// heartbeats send no statement about their link (they re-read their line,
// for the changes that raise no event, but not the link: its revocation
// is an event). Fails on the per-heartbeat link check it replaced.
func TestIdleConsolesReadNoLink(t *testing.T) {
	tr := &roundTrips{}
	app := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()))
	q := newCounterQueue(t, app, "Idle")
	l := newCounterLink(t, app, q.ID, map[string]any{})
	for range 10 {
		c := openSSE(t, app.BaseURL+"/counter/"+l.Token+"/events", nil)
		until(t, c, "console", 5*time.Second)
	}
	sent := tr.during(func() { time.Sleep(6500 * time.Millisecond) })
	for _, s := range sent {
		if strings.Contains(s, "counter_links") {
			t.Fatalf("an idle console read its link: %s", s)
		}
	}
	t.Logf("%d statements from ten idle consoles over 6.5 s", len(sent))
}
