package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// whHit is one request a receiver got.
type whHit struct {
	At     time.Time
	Header http.Header
	Body   []byte
}

// Delivery is the delivery id the request carries.
func (h whHit) Delivery() string { return h.Header.Get("X-Service-Delivery") }

// whReceiver is a real HTTP receiver on loopback whose answers a test
// scripts: respond gets the 1-based number of the request and answers a
// status, after blocking if it wants (until stop, at the latest).
type whReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	hits    []whHit
	changed chan struct{}
	stop    chan struct{}
	respond func(n int, r *http.Request, stop <-chan struct{}) int
}

func newWhReceiver(t testing.TB, respond func(n int, r *http.Request, stop <-chan struct{}) int) *whReceiver {
	t.Helper()
	rc := &whReceiver{changed: make(chan struct{}), stop: make(chan struct{}), respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	// Release blocked handlers first: Close waits for them.
	t.Cleanup(func() { close(rc.stop); rc.srv.Close() })
	return rc
}

func (rc *whReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.hits = append(rc.hits, whHit{At: time.Now(), Header: r.Header.Clone(), Body: body})
	n := len(rc.hits)
	close(rc.changed)
	rc.changed = make(chan struct{})
	respond := rc.respond
	rc.mu.Unlock()
	status := http.StatusOK
	if respond != nil {
		status = respond(n, r, rc.stop)
	}
	w.WriteHeader(status)
}

// URL is where the receiver listens.
func (rc *whReceiver) URL() string { return rc.srv.URL + "/hooks" }

// Hits returns the requests so far.
func (rc *whReceiver) Hits() []whHit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]whHit(nil), rc.hits...)
}

// wait returns the requests once there are at least n, or fails after
// timeout.
func (rc *whReceiver) wait(t testing.TB, n int, timeout time.Duration) []whHit {
	t.Helper()
	deadline := time.After(timeout)
	for {
		rc.mu.Lock()
		hits, changed := append([]whHit(nil), rc.hits...), rc.changed
		rc.mu.Unlock()
		if len(hits) >= n {
			return hits
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the receiver got %d requests in %v, want %d", len(hits), timeout, n)
		}
	}
}

// whStatic answers every request with status.
func whStatic(status int) func(int, *http.Request, <-chan struct{}) int {
	return func(int, *http.Request, <-chan struct{}) int { return status }
}

// whHang answers nothing until the client gives up or the test ends.
func whHang(_ int, r *http.Request, stop <-chan struct{}) int {
	select {
	case <-r.Context().Done():
	case <-stop:
	}
	return http.StatusServiceUnavailable
}

// whBody is a delivery request's body.
type whBody struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	CreatedAt string          `json:"createdAt"`
}

// whRun creates an entity and a TURN queue and returns the queue's open run.
func whRun(t testing.TB, a *apptest.App) string {
	t.Helper()
	var e client.Entity
	a.API(http.MethodPost, "/entities", map[string]any{"name": "Centro Núñez"}).Must(http.StatusCreated, &e)
	var q struct {
		Runs []struct{ ID string } `json:"runs"`
	}
	a.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Farmacia «Sur»", "type": "TURN"}).Must(http.StatusCreated, &q)
	if len(q.Runs) != 1 {
		t.Fatalf("a new queue has %d runs", len(q.Runs))
	}
	return q.Runs[0].ID
}

// whEndpoint subscribes url to events and returns its id and secret.
func whEndpoint(t testing.TB, a *apptest.App, url string, events ...string) (id, secret string) {
	t.Helper()
	var ep struct{ ID, Secret string }
	a.API(http.MethodPost, "/webhook-endpoints", map[string]any{"url": url, "events": events}).Must(http.StatusCreated, &ep)
	return ep.ID, ep.Secret
}

// whToggle closes the run, or opens it: one queue.closed or queue.opened.
func whToggle(t testing.TB, a *apptest.App, runID, op string) {
	t.Helper()
	a.API(http.MethodPost, "/queue-runs/"+runID+"/"+op, nil).Must(http.StatusCreated, nil)
}

// whLog returns the delivery log.
func whLog(t testing.TB, a *apptest.App) []client.WebhookDelivery {
	t.Helper()
	var page struct {
		Data       []client.WebhookDelivery `json:"data"`
		Pagination struct {
			NextCursor *string `json:"nextCursor"`
			Limit      int     `json:"limit"`
		} `json:"pagination"`
	}
	a.API(http.MethodGet, "/webhook-deliveries", nil).Must(http.StatusOK, &page)
	if page.Pagination.NextCursor != nil || page.Pagination.Limit != 30 {
		t.Fatalf("delivery log pagination %+v", page.Pagination)
	}
	return page.Data
}

// whLogged waits until the log's delivery id satisfies ok.
func whLogged(t testing.TB, a *apptest.App, id string, timeout time.Duration, ok func(client.WebhookDelivery) bool) client.WebhookDelivery {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var last client.WebhookDelivery
		for _, d := range whLog(t, a) {
			if d.ID == id {
				last = d
			}
		}
		if last.ID != "" && ok(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %s after %v: %+v", id, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
