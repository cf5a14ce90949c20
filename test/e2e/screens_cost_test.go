package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
)

// TestScreensCostByRunsNotScreens: the statements a call costs the
// process's ticket pages and board (after its own) do not grow with the
// pages open: the run's view is built once per event for all of them
// (issue 32). Measured with 1 page, then 40 pages of the same run: the
// same statements, and none per page.
func TestScreensCostByRunsNotScreens(t *testing.T) {
	tr := &roundTrips{}
	a := apptest.Postgres(t, apptest.WithDBTracer(tr.tracer()))
	q := newLiveQueue(t, a, "Cost", nil)
	const n = 41
	var ids, tokens []string
	for i := 0; i < n; i++ {
		var turn struct{ ID string }
		a.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &turn)
		ids = append(ids, turn.ID)
		tokens = append(tokens, newTicketLink(t, a, turn.ID, nil).Token)
	}
	board := openSSE(t, a.BaseURL+"/display/"+newDisplayToken(t, a, q.RunID).Token+"/events", nil)
	board.next(5 * time.Second)

	// What one call costs once the streams have it: the call's own
	// statements, then the run's build, while every page open takes its
	// ticket.
	call := func(i int, pages []*sseConn) []string {
		return tr.during(func() {
			a.API(http.MethodPost, "/turns/"+ids[i]+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
			for _, p := range append(pages, board) {
				p.next(5 * time.Second)
			}
			time.Sleep(200 * time.Millisecond) // a late statement would be counted
		})
	}
	free := func(i int, pages []*sseConn) {
		a.API(http.MethodPost, "/turns/"+ids[i]+"/start", nil).Must(http.StatusCreated, nil)
		a.API(http.MethodPost, "/turns/"+ids[i]+"/complete", nil).Must(http.StatusCreated, nil)
		for _, p := range append(pages, board) {
			drain(p, 300*time.Millisecond)
		}
	}
	open := func(from, to int) []*sseConn {
		var out []*sseConn
		for i := from; i < to; i++ {
			c := openSSE(t, a.BaseURL+"/ticket/"+tokens[i]+"/events", nil)
			c.next(5 * time.Second)
			out = append(out, c)
		}
		for _, c := range append(out, board) {
			drain(c, 300*time.Millisecond)
		}
		return out
	}
	one := open(n-1, n)
	call(0, one) // warm: the first of each statement prepares it
	free(0, one)
	withOne := call(1, one)
	free(1, one)
	many := append(one, open(2, n-1)...)
	withMany := call(2, many)
	count := func(trips []string) (n int) {
		for _, s := range trips {
			if !strings.HasPrefix(s, "prepare") {
				n++
			}
		}
		return n
	}
	t.Logf("one call with 1 ticket page and a board: %d statements; with %d pages: %d", count(withOne), len(many), count(withMany))
	if count(withMany) > count(withOne)+2 {
		t.Fatalf("a call with %d ticket pages open cost %d statements, with 1 page %d: the pages read on their own\n%s",
			len(many), count(withMany), count(withOne), strings.Join(withMany, "\n"))
	}
}
