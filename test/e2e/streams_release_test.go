package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
)

// TestClosedStreamsReleasedWithinASecond: a client that closes its ticket,
// board or API stream frees its connection on the server within a second
// (issue 32: it used to wait for the next heartbeat's failed write, 5 to
// 10 s, so a reconnect storm held twice the connections).
func TestClosedStreamsReleasedWithinASecond(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t)
		q := newLiveQueue(t, app, "Release", nil)
		var turn struct{ ID string }
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &turn)
		link := newTicketLink(t, app, turn.ID, nil)
		board := newDisplayToken(t, app, q.RunID)
		// Let the set-up's keep-alive connections go.
		http.DefaultClient.CloseIdleConnections()
		base := app.Server.OpenConnections()

		const each = 10
		var conns []*sseConn
		for i := 0; i < each; i++ {
			conns = append(conns,
				openSSE(t, app.BaseURL+"/ticket/"+link.Token+"/events", nil),
				openSSE(t, app.BaseURL+"/display/"+board.Token+"/events", nil),
				openSSE(t, app.BaseURL+"/api/v1/events/stream", map[string]string{"X-API-Key": app.Key}))
		}
		// openSSE returned with each stream's headers: all are up.
		if open := app.Server.OpenConnections(); open < 3*each {
			t.Fatalf("%d connections open with %d streams (%d before)", open, 3*each, base)
		}
		for _, c := range conns {
			c.Close()
		}
		closed := time.Now()
		for app.Server.OpenConnections() > base {
			if time.Since(closed) > time.Second {
				t.Fatalf("%d connections still open a second after %d streams closed (%d before)",
					app.Server.OpenConnections(), 3*each, base)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%d streams released in %v", 3*each, time.Since(closed).Round(time.Millisecond))
	})
}
