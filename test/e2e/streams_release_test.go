package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
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

// TestTicketAndBoardSeeCallsOfAnotherProcess: two processes on one
// database; ticket pages and a board open on B, calls made through A. Each
// call reaches the called turn's ticket (CALLED, with its station), the
// others' "ahead", and the board, within a second, once each: the run's
// view is built by B's group from the log that A wrote (issue 32, several
// processes).
func TestTicketAndBoardSeeCallsOfAnotherProcess(t *testing.T) {
	url := pgtest.URL(t)
	a := apptest.PostgresAt(t, url)
	b := apptest.PostgresAt(t, url)
	b.AccountID, b.Key = a.AccountID, a.Key
	q := newLiveQueue(t, a, "Across", nil)
	const n = 4
	var ids []string
	var tickets []*sseConn
	for i := 0; i < n; i++ {
		var turn struct{ ID string }
		a.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &turn)
		ids = append(ids, turn.ID)
		link := newTicketLink(t, a, turn.ID, nil)
		tk := openSSE(t, b.BaseURL+"/ticket/"+link.Token+"/events", nil)
		if f := tk.next(5 * time.Second); f.Event != "ticket" || !strings.Contains(f.Data, fmt.Sprintf(`"ahead":%d`, i)) {
			t.Fatalf("ticket %d's first frame: %s %s", i, f.Event, f.Data)
		}
		tickets = append(tickets, tk)
	}
	board := openSSE(t, b.BaseURL+"/display/"+newDisplayToken(t, a, q.RunID).Token+"/events", nil)
	if f := board.next(5 * time.Second); f.Event != "board" {
		t.Fatalf("board's first frame: %s", f.Event)
	}
	// The tickets saw the turns taken (their own too, when B's group
	// read its event after the page connected): let those go.
	for _, tk := range append(tickets, board) {
		drain(tk, 500*time.Millisecond)
	}
	for i := 0; i < 2; i++ {
		if i > 0 {
			a.API(http.MethodPost, "/turns/"+ids[i-1]+"/start", nil).Must(http.StatusCreated, nil)
			a.API(http.MethodPost, "/turns/"+ids[i-1]+"/complete", nil).Must(http.StatusCreated, nil)
			// The start (turn_state.changed) and turn.completed reach
			// every ticket of the run, and the board: a frame each.
			for _, tk := range append(tickets, board) {
				for range 2 {
					if f := tk.next(time.Second); f.ID == "" {
						t.Fatalf("after starting and completing %d: %s %s", i-1, f.Event, f.Data)
					}
				}
			}
		}
		called := time.Now()
		a.API(http.MethodPost, "/turns/"+ids[i]+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
		f := tickets[i].next(time.Second)
		if f.Event != "ticket" || !strings.Contains(f.Data, `"status":"CALLED"`) || !strings.Contains(f.Data, q.StationLabel) || f.ID == "" {
			t.Fatalf("the called ticket on B: %s %s", f.Event, f.Data)
		}
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			f := tickets[j].next(time.Second)
			if j > i && !strings.Contains(f.Data, fmt.Sprintf(`"ahead":%d`, j-i-1)) {
				t.Fatalf("ticket %d after call %d: %s", j, i, f.Data)
			}
		}
		if f := board.next(time.Second); f.Event != "board" || !strings.Contains(f.Data, `"event":"turn.called"`) || !strings.Contains(f.Data, ids[i]) {
			t.Fatalf("the board on B after call %d: %s", i, f.Data)
		}
		t.Logf("call %d through A seen on B's ticket pages and board within %v", i, time.Since(called).Round(time.Millisecond))
	}
	for _, tk := range append(tickets, board) {
		tk.none(300 * time.Millisecond)
	}
}

// drain reads frames until none comes within d.
func drain(c *sseConn, d time.Duration) {
	for {
		select {
		case _, ok := <-c.frames:
			if !ok {
				return
			}
		case <-time.After(d):
			return
		}
	}
}
