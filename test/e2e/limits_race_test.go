package e2e

// "At most N" rules that count rows and then insert one hold under
// concurrency on PostgreSQL (issue 23): each race sends more concurrent
// creates than the limit for one parent, through the API of a real
// process, and expects exactly the limit made and every other answer 409
// with the rule's code. The memory adapter runs units of work one at a
// time, so only PostgreSQL can race; docs/architecture.md lists every
// such rule and what holds it.

import (
	"net/http"
	"sync"
	"testing"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// raceCreates sends n concurrent POSTs to path and counts the answers by
// status; any answer but 201 and 409 code fails the test.
func raceCreates(t *testing.T, a *apptest.App, n int, path string, body func(i int) any, code string) (created int) {
	t.Helper()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		refused  int
		problems []string
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := a.API(http.MethodPost, path, body(i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Status == http.StatusCreated:
				created++
			case r.Status == http.StatusConflict && r.ErrorCode() == code:
				refused++
			default:
				problems = append(problems, string(r.Body))
			}
		}()
	}
	wg.Wait()
	if len(problems) > 0 {
		t.Fatalf("%d unexpected answers, first: %s", len(problems), problems[0])
	}
	if created+refused != n {
		t.Fatalf("%d created + %d refused of %d", created, refused, n)
	}
	return created
}

func raceApp(t *testing.T) *apptest.App {
	return apptest.Postgres(t, apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 100000
		c.Webhooks.AllowPrivate = true
	}))
}

// TestRaceTicketLinksAtMost20: 40 concurrent creates for one turn make 20
// links (before issue 23: 25-33).
func TestRaceTicketLinksAtMost20(t *testing.T) {
	a := raceApp(t)
	q := boardQueue(t, a)
	turn, _ := takeTicketTurn(t, a, q.RunID, map[string]any{})
	made := raceCreates(t, a, 40, "/turns/"+turn+"/ticket-links", func(int) any { return nil }, "TOO_MANY_TICKET_LINKS")
	if made != 20 {
		t.Fatalf("%d links made for one turn, at most 20", made)
	}
}

// TestRaceDisplayTokensAtMost50: 70 concurrent creates for one run make 50
// live tokens (before issue 23: 54-57), and the run lists 50.
func TestRaceDisplayTokensAtMost50(t *testing.T) {
	a := raceApp(t)
	q := boardQueue(t, a)
	made := raceCreates(t, a, 70, "/queue-runs/"+q.RunID+"/display-tokens", func(int) any { return map[string]any{"label": "Lobby"} }, "TOO_MANY_DISPLAY_TOKENS")
	if made != 50 {
		t.Fatalf("%d display tokens made for one run, at most 50", made)
	}
	var page struct{ Data []any }
	a.API(http.MethodGet, "/queue-runs/"+q.RunID+"/display-tokens?limit=200", nil).Must(http.StatusOK, &page)
	if len(page.Data) != 50 {
		t.Fatalf("the run lists %d tokens", len(page.Data))
	}
}

// TestRaceWebhookEndpointsAtMost20: 40 concurrent creates for one account
// make 20 endpoints.
func TestRaceWebhookEndpointsAtMost20(t *testing.T) {
	a := raceApp(t)
	made := raceCreates(t, a, 40, "/webhook-endpoints", func(int) any {
		return map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"turn.created"}}
	}, "TOO_MANY_WEBHOOK_ENDPOINTS")
	if made != 20 {
		t.Fatalf("%d webhook endpoints made for one account, at most 20", made)
	}
}

// TestRaceCounterLinksAtMost50: 70 concurrent creates for one queue make 50
// live counter links, and the queue lists 50.
func TestRaceCounterLinksAtMost50(t *testing.T) {
	a := raceApp(t)
	q := newCounterQueue(t, a, "Counters")
	made := raceCreates(t, a, 70, "/queues/"+q.ID+"/counter-links", func(int) any { return map[string]any{"label": "Desk"} }, "TOO_MANY_COUNTER_LINKS")
	if made != 50 {
		t.Fatalf("%d counter links made for one queue, at most 50", made)
	}
	var page struct{ Data []any }
	a.API(http.MethodGet, "/queues/"+q.ID+"/counter-links?limit=200", nil).Must(http.StatusOK, &page)
	if len(page.Data) != 50 {
		t.Fatalf("the queue lists %d links", len(page.Data))
	}
}
