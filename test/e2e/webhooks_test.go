package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/webhook"
)

// whNoLimit lifts the rate limit: the tests poll the delivery log.
var whNoLimit = apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 1 << 30 })

var whTimestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// TestWebhookDelivery follows one event from the API call that raised it
// to a real receiver: the request's headers and body, its signature, and
// the delivery log.
func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		t.Parallel()
		a := start(t, whNoLimit)
		rc := newWhReceiver(t, whStatic(http.StatusNoContent))
		other := newWhReceiver(t, whStatic(http.StatusOK))
		run := whRun(t, a)

		var created map[string]any
		a.API(http.MethodPost, "/webhook-endpoints", map[string]any{"url": rc.URL(), "events": []string{"queue.closed", "queue.opened"}}).
			Must(http.StatusCreated, &created)
		secret, _ := created["secret"].(string)
		epID, _ := created["id"].(string)
		if !regexp.MustCompile(`^whsec_[A-Za-z0-9_-]{43}$`).MatchString(secret) || !strings.HasPrefix(epID, "whe_") {
			t.Fatalf("creation answer %v", created)
		}
		whEndpoint(t, a, other.URL(), "turn.created") // subscribed to something else

		// The secret is never shown again.
		list := a.API(http.MethodGet, "/webhook-endpoints", nil).Must(http.StatusOK, nil)
		if bytes.Contains(list.Body, []byte(secret)) || bytes.Contains(list.Body, []byte(`"secret"`)) {
			t.Fatalf("the list shows the secret: %s", list.Body)
		}
		var page struct {
			Data []struct {
				ID     string   `json:"id"`
				URL    string   `json:"url"`
				Events []string `json:"events"`
			} `json:"data"`
		}
		list.Decode(&page)
		if len(page.Data) != 2 || page.Data[0].ID != epID || page.Data[0].URL != rc.URL() || len(page.Data[0].Events) != 2 {
			t.Fatalf("endpoint list %s", list.Body)
		}

		whToggle(t, a, run, "close")
		hit := rc.wait(t, 1, 10*time.Second)[0]
		if hit.Header.Get("Content-Type") != "application/json" || hit.Header.Get("X-Service-Event") != "queue.closed" {
			t.Errorf("headers %v", hit.Header)
		}
		sig := hit.Header.Get("X-Service-Signature")
		if !regexp.MustCompile(`^sha256=[0-9a-f]{64}$`).MatchString(sig) || !webhook.Verify(secret, hit.Body, sig) {
			t.Fatalf("signature %q does not verify over %s", sig, hit.Body)
		}
		if webhook.Verify(secret, append(bytes.TrimSpace(hit.Body), ' '), sig) {
			t.Fatal("the signature verifies another body")
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(hit.Body, &members); err != nil || len(members) != 4 {
			t.Fatalf("body %s: want exactly id, event, data, createdAt", hit.Body)
		}
		var body whBody
		_ = json.Unmarshal(hit.Body, &body)
		var data map[string]any
		_ = json.Unmarshal(body.Data, &data)
		if body.ID != hit.Delivery() || !strings.HasPrefix(body.ID, "dlv_") || body.Event != "queue.closed" ||
			!whTimestamp.MatchString(body.CreatedAt) || data["queueRunId"] != run {
			t.Fatalf("body %s", hit.Body)
		}
		d := whLogged(t, a, body.ID, 5*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "SUCCEEDED" })
		if d.Attempts != 1 || d.LastResponseStatus == nil || *d.LastResponseStatus != 204 || d.LastError != nil ||
			d.NextAttemptAt != nil || d.EndpointID != epID || d.Event != "queue.closed" || !strings.HasPrefix(d.EventID, "evt_") {
			t.Fatalf("logged delivery %+v", d)
		}

		whToggle(t, a, run, "open")
		second := rc.wait(t, 2, 10*time.Second)[1]
		if second.Header.Get("X-Service-Event") != "queue.opened" || second.Delivery() == body.ID {
			t.Fatalf("second delivery %v", second.Header)
		}
		whLogged(t, a, second.Delivery(), 5*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "SUCCEEDED" })
		log := whLog(t, a)
		if len(log) != 2 || log[0].ID != second.Delivery() || log[1].ID != body.ID {
			t.Fatalf("log not newest first: %+v", log)
		}
		if n := len(other.Hits()); n != 0 {
			t.Fatalf("the endpoint subscribed to turn.created got %d requests", n)
		}
	})
}

// TestWebhookRetry has the receiver fail the first attempt: the second
// comes on the published schedule (5 s ±10%) with the same id, body and
// signature.
func TestWebhookRetry(t *testing.T) {
	t.Parallel()
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		t.Parallel()
		a := start(t, whNoLimit)
		rc := newWhReceiver(t, func(n int, _ *http.Request, _ <-chan struct{}) int {
			if n == 1 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		run := whRun(t, a)
		_, secret := whEndpoint(t, a, rc.URL(), "queue.closed")
		whToggle(t, a, run, "close")

		first := rc.wait(t, 1, 10*time.Second)[0]
		failed := whLogged(t, a, first.Delivery(), 5*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "FAILED" })
		if failed.Attempts != 1 || *failed.LastResponseStatus != 500 || failed.LastError == nil || failed.NextAttemptAt == nil {
			t.Fatalf("after the 500: %+v", failed)
		}
		if due := failed.NextAttemptAt.Sub(*failed.LastAttemptAt); due < 4500*time.Millisecond || due > 5500*time.Millisecond {
			t.Fatalf("next attempt %v after the first, want 5s ±10%%", due)
		}

		hits := rc.wait(t, 2, 15*time.Second)
		second := hits[1]
		if second.Delivery() != first.Delivery() || !bytes.Equal(second.Body, first.Body) ||
			second.Header.Get("X-Service-Signature") != first.Header.Get("X-Service-Signature") ||
			!webhook.Verify(secret, second.Body, second.Header.Get("X-Service-Signature")) {
			t.Fatalf("the retry differs:\n%v %s\n%v %s", first.Header, first.Body, second.Header, second.Body)
		}
		if gap := second.At.Sub(first.At); gap < 4*time.Second {
			t.Fatalf("retried after %v", gap)
		}
		d := whLogged(t, a, first.Delivery(), 5*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "SUCCEEDED" })
		if d.Attempts != 2 || *d.LastResponseStatus != 200 || d.LastError != nil || d.NextAttemptAt != nil {
			t.Fatalf("after the retry: %+v", d)
		}
		time.Sleep(500 * time.Millisecond)
		if n := len(rc.Hits()); n != 2 {
			t.Fatalf("%d requests for one delivery", n)
		}
	})
}

// TestWebhookRedeliver sends a delivered delivery again on request.
func TestWebhookRedeliver(t *testing.T) {
	t.Parallel()
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		t.Parallel()
		a := start(t, whNoLimit)
		rc := newWhReceiver(t, whStatic(http.StatusOK))
		run := whRun(t, a)
		whEndpoint(t, a, rc.URL(), "queue.closed")
		whToggle(t, a, run, "close")
		first := rc.wait(t, 1, 10*time.Second)[0]
		whLogged(t, a, first.Delivery(), 5*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "SUCCEEDED" })

		_, otherKey := a.NewAccount("premium", "webhooks:write")
		if r := a.APIWith(otherKey, http.MethodPost, "/webhook-deliveries/"+first.Delivery()+"/redeliver", nil); r.Status != http.StatusForbidden {
			t.Fatalf("another account redelivered: %d %s", r.Status, r.Body)
		}
		if r := a.API(http.MethodPost, "/webhook-deliveries/dlv_01jx0000000000000000000000/redeliver", nil); r.Status != http.StatusNotFound {
			t.Fatalf("redeliver of nothing: %d %s", r.Status, r.Body)
		}
		var d client.WebhookDelivery
		a.API(http.MethodPost, "/webhook-deliveries/"+first.Delivery()+"/redeliver", nil).Must(http.StatusCreated, &d)
		if d.ID != first.Delivery() {
			t.Fatalf("redeliver answered %+v", d)
		}
		again := rc.wait(t, 2, 10*time.Second)[1]
		if again.Delivery() != first.Delivery() || !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("the redelivery differs: %s vs %s", again.Body, first.Body)
		}
		whLogged(t, a, first.Delivery(), 5*time.Second, func(d client.WebhookDelivery) bool { return d.Attempts == 2 && d.Status == "SUCCEEDED" })
	})
}

// TestWebhookDeleteStopsDeliveries deletes an endpoint whose delivery is
// waiting for its retry: the retry is not sent, and neither is anything
// raised afterwards.
func TestWebhookDeleteStopsDeliveries(t *testing.T) {
	t.Parallel()
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		t.Parallel()
		a := start(t, whNoLimit)
		rc := newWhReceiver(t, whStatic(http.StatusBadGateway))
		run := whRun(t, a)
		id, _ := whEndpoint(t, a, rc.URL(), "queue.closed", "queue.opened")
		whToggle(t, a, run, "close")
		first := rc.wait(t, 1, 10*time.Second)[0]
		whLogged(t, a, first.Delivery(), 5*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "FAILED" && d.NextAttemptAt != nil })

		_, otherKey := a.NewAccount("premium", "webhooks:write")
		if r := a.APIWith(otherKey, http.MethodDelete, "/webhook-endpoints/"+id, nil); r.Status != http.StatusForbidden {
			t.Fatalf("another account deleted the endpoint: %d", r.Status)
		}
		var gone struct {
			ID      string `json:"id"`
			Deleted bool   `json:"deleted"`
		}
		a.API(http.MethodDelete, "/webhook-endpoints/"+id, nil).Must(http.StatusOK, &gone)
		if gone.ID != id || !gone.Deleted {
			t.Fatalf("delete answered %+v", gone)
		}
		if r := a.API(http.MethodDelete, "/webhook-endpoints/"+id, nil); r.Status != http.StatusNotFound {
			t.Fatalf("second delete: %d", r.Status)
		}
		whToggle(t, a, run, "open")
		// The retry was due 5 s after the first attempt; wait past it.
		time.Sleep(7 * time.Second)
		if n := len(rc.Hits()); n != 1 {
			t.Fatalf("the receiver got %d requests after the endpoint was deleted", n-1)
		}
		if log := whLog(t, a); len(log) != 0 {
			t.Fatalf("the deleted endpoint's deliveries are still listed: %+v", log)
		}
	})
}

// TestWebhookEndpointsAPI covers validation, scopes, the SSRF refusal at
// creation and pagination.
func TestWebhookEndpointsAPI(t *testing.T) {
	t.Parallel()
	a := apptest.Memory(t, whNoLimit, apptest.WithConfig(func(c *config.Config) { c.Webhooks.AllowPrivate = false }))
	for _, tc := range []struct {
		body any
		path string
		rule string
	}{
		{map[string]any{"url": "https://example.com/h"}, "events", "required"},
		{map[string]any{"url": "https://example.com/h", "events": []string{}}, "events", "min_items"},
		{map[string]any{"url": "https://example.com/h", "events": []string{"queue.exploded"}}, "events[0]", "oneof"},
		{map[string]any{"url": "example.com/h", "events": []string{"queue.closed"}}, "url", "uri"},
		{map[string]any{"url": "https://example.com/" + strings.Repeat("x", 500), "events": []string{"queue.closed"}}, "url", "max_length"},
		{map[string]any{"url": "https://example.com/h", "events": []string{"queue.closed"}, "secret": "mine"}, "secret", "unknown_field"},
		{map[string]any{"url": "http://127.0.0.1:8080/h", "events": []string{"queue.closed"}}, "url", "public_host"},
		{map[string]any{"url": "http://[::ffff:169.254.169.254]/", "events": []string{"queue.closed"}}, "url", "public_host"},
		{map[string]any{"url": "http://localhost/h", "events": []string{"queue.closed"}}, "url", "public_host"},
		{map[string]any{"url": "http://100.100.1.1/h", "events": []string{"queue.closed"}}, "url", "public_host"},
	} {
		r := a.API(http.MethodPost, "/webhook-endpoints", tc.body)
		found := false
		for _, f := range r.FieldErrors() {
			found = found || (f.Path == tc.path && f.Rule == tc.rule)
		}
		if r.Status != http.StatusBadRequest || r.ErrorCode() != "VALIDATION_ERROR" || !found {
			t.Errorf("%v: want 400 %s/%s, got %d %s", tc.body, tc.path, tc.rule, r.Status, r.Body)
		}
	}

	_, readKey := a.NewAccount("premium", "webhooks:read")
	if r := a.APIWith(readKey, http.MethodGet, "/webhook-endpoints", nil); r.Status != http.StatusOK {
		t.Errorf("webhooks:read lists: %d", r.Status)
	}
	if r := a.APIWith(readKey, http.MethodGet, "/webhook-deliveries", nil); r.Status != http.StatusOK {
		t.Errorf("webhooks:read reads the log: %d", r.Status)
	}
	if r := a.APIWith(readKey, http.MethodPost, "/webhook-endpoints", map[string]any{"url": "https://example.com/h", "events": []string{"queue.closed"}}); r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "webhooks:write") {
		t.Errorf("webhooks:read creates: %d %s", r.Status, r.Body)
	}
	_, queuesKey := a.NewAccount("premium", "queues:write")
	if r := a.APIWith(queuesKey, http.MethodGet, "/webhook-deliveries", nil); r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "webhooks:read") {
		t.Errorf("a key without webhooks reads the log: %d %s", r.Status, r.Body)
	}

	// Pagination of endpoints (the example.com lookup may fail offline,
	// which lets the url through: only a host that does not exist or is
	// private is refused).
	for i := 0; i < 3; i++ {
		a.API(http.MethodPost, "/webhook-endpoints", map[string]any{"url": "http://93.184.215.14/h", "events": []string{"queue.closed"}}).Must(http.StatusCreated, nil)
	}
	var p1 struct {
		Data       []struct{ ID string } `json:"data"`
		Pagination struct {
			NextCursor *string `json:"nextCursor"`
		} `json:"pagination"`
	}
	a.API(http.MethodGet, "/webhook-endpoints?limit=2", nil).Must(http.StatusOK, &p1)
	if len(p1.Data) != 2 || p1.Pagination.NextCursor == nil {
		t.Fatalf("first page %+v", p1)
	}
	var p2 struct {
		Data []struct{ ID string } `json:"data"`
	}
	a.API(http.MethodGet, "/webhook-endpoints?limit=2&cursor="+*p1.Pagination.NextCursor, nil).Must(http.StatusOK, &p2)
	if len(p2.Data) != 1 || p2.Data[0].ID <= p1.Data[1].ID {
		t.Fatalf("second page %+v", p2)
	}
}

// TestSlowReceiverDoesNotHoldUpOthers points one endpoint at a receiver
// that never answers and another at a healthy one, and raises more events
// than the River runner has workers: the healthy receiver gets every event
// at once, and the hanging one's attempts are cut at 10 s.
func TestSlowReceiverDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	a := apptest.Postgres(t, whNoLimit)
	var hung atomic.Int32
	slow := newWhReceiver(t, func(n int, r *http.Request, stop <-chan struct{}) int {
		hung.Add(1)
		return whHang(n, r, stop)
	})
	fast := newWhReceiver(t, whStatic(http.StatusOK))
	run := whRun(t, a)
	whEndpoint(t, a, slow.URL(), "queue.closed", "queue.opened")
	whEndpoint(t, a, fast.URL(), "queue.closed", "queue.opened")

	const events = 14 // more than the runner's 10 workers
	start := time.Now()
	for i := 0; i < events; i++ {
		whToggle(t, a, run, []string{"close", "open"}[i%2])
	}
	hits := fast.wait(t, events, 8*time.Second)
	if took := hits[events-1].At.Sub(start); took > 5*time.Second {
		t.Fatalf("the healthy receiver waited %v for its deliveries", took)
	}
	// Until the first requests are cut at 10 s, the hanging receiver holds
	// at most core.DefaultMaxInFlight (4) of the workers.
	if n := hung.Load(); n > 4 {
		t.Fatalf("%d requests open to the hanging receiver at once", n)
	}
	first := slow.wait(t, 1, 5*time.Second)[0]
	cut := whLogged(t, a, first.Delivery(), 15*time.Second, func(d client.WebhookDelivery) bool { return d.Attempts >= 1 })
	if cut.Status != "FAILED" || cut.LastError == nil || *cut.LastError != "no response within 10s" || cut.LastResponseStatus != nil {
		t.Fatalf("the hanging attempt was recorded as %+v (last error %q, last status %v)", cut,
			platform.Deref(cut.LastError, "<nil>"), platform.Deref(cut.LastResponseStatus, 0))
	}
	if cut.LastAttemptAt == nil {
		t.Fatalf("the hanging attempt has no lastAttemptAt: %+v", cut)
	}
	if took := cut.LastAttemptAt.Sub(first.At); took < 9500*time.Millisecond || took > 12*time.Second {
		t.Fatalf("the hanging attempt was cut after %v, want 10s", took)
	}
	t.Logf("healthy receiver: %d deliveries in %v while the hanging one held %d requests", events, hits[events-1].At.Sub(start), hung.Load())
}

// TestTurnEventsAreDelivered follows turn events from the turns module: the
// data carries turnId, queueRunId and displayCode (spec 6).
func TestTurnEventsAreDelivered(t *testing.T) {
	t.Parallel()
	a := apptest.Memory(t, whNoLimit)
	rc := newWhReceiver(t, whStatic(http.StatusOK))
	run := whRun(t, a)
	_, secret := whEndpoint(t, a, rc.URL(), "turn.created", "turn.called")
	var turn struct {
		ID          string `json:"id"`
		DisplayCode string `json:"displayCode"`
	}
	a.API(http.MethodPost, "/queue-runs/"+run+"/turns", nil).Must(http.StatusCreated, &turn)
	a.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil).Must(http.StatusCreated, nil)
	hits := rc.wait(t, 2, 10*time.Second)
	events := map[string]bool{}
	for _, h := range hits {
		var body whBody
		_ = json.Unmarshal(h.Body, &body)
		var data map[string]any
		_ = json.Unmarshal(body.Data, &data)
		if !webhook.Verify(secret, h.Body, h.Header.Get("X-Service-Signature")) || h.Header.Get("X-Service-Event") != body.Event ||
			data["turnId"] != turn.ID || data["queueRunId"] != run || data["displayCode"] != turn.DisplayCode || turn.DisplayCode == "" {
			t.Errorf("delivery %s: %s", body.Event, h.Body)
		}
		events[body.Event] = true
	}
	if !events["turn.created"] || !events["turn.called"] {
		t.Fatalf("events delivered: %v", events)
	}
}
