package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
)

// server answers each request with the next of answers, and records what
// it received.
type server struct {
	t        *testing.T
	mu       sync.Mutex
	answers  []func(w http.ResponseWriter)
	requests []*http.Request
	bodies   []string
	srv      *httptest.Server
}

func newServer(t *testing.T, answers ...func(w http.ResponseWriter)) *server {
	s := &server{t: t, answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, r)
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		if n >= len(s.answers) {
			t.Errorf("request %d unexpected: %s %s", n+1, r.Method, r.URL)
			w.WriteHeader(500)
			return
		}
		s.answers[n](w)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func envelope(status int, code string, headers map[string]string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_test")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"code": code, "message": "m", "details": map[string]any{"fields": []any{map[string]any{"path": "name", "rule": "required", "message": "is required"}}},
			"requestId": "req_test"}})
	}
}

func ok(body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, body)
	}
}

// fastRetry keeps the tests quick; MaxRetryAfter still bounds 429 waits.
var fastRetry = client.WithRetry(client.Retry{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetryAfter: 3 * time.Second})

func TestRetries429AfterRetryAfter(t *testing.T) {
	s := newServer(t, envelope(429, "RATE_LIMITED", map[string]string{"Retry-After": "1"}), ok(`{"data":[],"pagination":{"nextCursor":null,"limit":50}}`))
	c := client.New(s.srv.URL, "qms_key", fastRetry)
	start := time.Now()
	page, err := c.ListEntities(context.Background(), nil)
	if err != nil || page == nil {
		t.Fatalf("ListEntities: %v", err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Fatalf("retried after %v, before Retry-After's 1 s", waited)
	}
	if got := s.requests[0].Header.Get("X-API-Key"); got != "qms_key" || len(s.requests) != 2 {
		t.Fatalf("key %q, %d requests", got, len(s.requests))
	}
}

func TestA503IsRetriedAfterItsRetryAfter(t *testing.T) {
	s := newServer(t, envelope(503, "SERVICE_UNAVAILABLE", map[string]string{"Retry-After": "1"}), ok(`{"data":[],"pagination":{"nextCursor":null,"limit":50}}`))
	c := client.New(s.srv.URL, "k", fastRetry)
	start := time.Now()
	if _, err := c.ListEntities(context.Background(), nil); err != nil {
		t.Fatalf("ListEntities: %v", err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond || len(s.requests) != 2 {
		t.Fatalf("retried after %v (%d requests), before Retry-After's 1 s", waited, len(s.requests))
	}
}

func TestA429AskingTooLongIsReturned(t *testing.T) {
	s := newServer(t, envelope(429, "RATE_LIMITED", map[string]string{"Retry-After": "30"}))
	c := client.New(s.srv.URL, "k", fastRetry)
	_, err := c.ListEntities(context.Background(), nil)
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 429 || e.Code != "RATE_LIMITED" || e.RetryAfter != 30*time.Second {
		t.Fatalf("err %v", err)
	}
}

func TestTransient5xxAreRetriedForSafeRequestsOnly(t *testing.T) {
	s := newServer(t, envelope(503, "UNAVAILABLE", nil), envelope(502, "BAD_GATEWAY", nil), ok(`{"id":"ent_1"}`))
	c := client.New(s.srv.URL, "k", fastRetry)
	if _, err := c.UpdateEntity(context.Background(), "ent_1", client.EntityUpdate{Name: client.Ptr("Main")}); err != nil {
		t.Fatalf("PATCH after two transient failures: %v", err)
	}
	if len(s.requests) != 3 || s.bodies[0] != s.bodies[2] {
		t.Fatalf("%d requests, bodies %q", len(s.requests), s.bodies)
	}

	// A POST without an idempotency key is not repeated after a 503: it
	// may have taken effect.
	s = newServer(t, envelope(503, "UNAVAILABLE", nil))
	c = client.New(s.srv.URL, "k", fastRetry)
	_, err := c.DispatchNext(context.Background(), "run_1", client.TurnCall{})
	if !client.IsCode(err, "UNAVAILABLE") || len(s.requests) != 1 {
		t.Fatalf("dispatch/next: %v after %d requests", err, len(s.requests))
	}
	// Nor is any request after a 500, a bug rather than a blip.
	s = newServer(t, envelope(500, "INTERNAL_ERROR", nil))
	c = client.New(s.srv.URL, "k", fastRetry)
	if _, err := c.GetTurn(context.Background(), "turn_1"); !client.IsCode(err, "INTERNAL_ERROR") || len(s.requests) != 1 {
		t.Fatalf("500: %v after %d requests", err, len(s.requests))
	}
}

func TestCreatesGetAnIdempotencyKeyKeptAcrossRetries(t *testing.T) {
	s := newServer(t, envelope(503, "UNAVAILABLE", nil), ok(`{"id":"turn_1","displayCode":"A001"}`))
	c := client.New(s.srv.URL, "k", fastRetry)
	turn, err := c.CreateTurn(context.Background(), "run_1", client.TurnCreate{PeopleCount: client.Ptr(2)})
	if err != nil || turn.ID != "turn_1" {
		t.Fatalf("CreateTurn: %v", err)
	}
	var first, second map[string]any
	_ = json.Unmarshal([]byte(s.bodies[0]), &first)
	_ = json.Unmarshal([]byte(s.bodies[1]), &second)
	key, _ := first["idempotencyKey"].(string)
	if !strings.HasPrefix(key, "sdk_") || len(key) < 8 || second["idempotencyKey"] != key || first["peopleCount"] != 2.0 {
		t.Fatalf("bodies %s / %s", s.bodies[0], s.bodies[1])
	}
	if s.requests[0].URL.Path != "/api/v1/queue-runs/run_1/turns" || s.requests[0].Method != "POST" {
		t.Fatalf("%s %s", s.requests[0].Method, s.requests[0].URL.Path)
	}
	// A key the caller gives is kept.
	s = newServer(t, ok(`{"id":"turn_2"}`))
	c = client.New(s.srv.URL, "k", fastRetry)
	if _, err := c.CreateTurn(context.Background(), "run_1", client.TurnCreate{IdempotencyKey: client.Ptr("mine-0001")}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.bodies[0], `"idempotencyKey":"mine-0001"`) {
		t.Fatalf("body %s", s.bodies[0])
	}
}

func TestTypedErrors(t *testing.T) {
	s := newServer(t, envelope(400, "VALIDATION_ERROR", nil), func(w http.ResponseWriter) {
		w.WriteHeader(502)
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
	})
	c := client.New(s.srv.URL, "k", client.WithRetry(client.Retry{MaxAttempts: 1}))
	_, err := c.CreateEntity(context.Background(), client.EntityCreate{})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Code != "VALIDATION_ERROR" || e.RequestID != "req_test" ||
		e.Operation != "createEntity" || len(e.FieldErrors()) != 1 || e.FieldErrors()[0].Path != "name" {
		t.Fatalf("err %#v", err)
	}
	if !strings.Contains(err.Error(), "req_test") {
		t.Fatalf("message %q does not quote the request id", err.Error())
	}
	_, err = c.ListEntities(context.Background(), nil)
	if !errors.As(err, &e) || e.Code != "HTTP_502" || !strings.Contains(e.Message, "bad gateway") {
		t.Fatalf("non-envelope error %#v", err)
	}
}

func TestNullableMembers(t *testing.T) {
	cases := []struct {
		in   client.EntityUpdate
		want string
	}{
		{client.EntityUpdate{}, `{}`},
		{client.EntityUpdate{Description: client.Null[string]()}, `{"description":null}`},
		{client.EntityUpdate{Description: client.Value("Open late"), Name: client.Ptr("Main")}, `{"description":"Open late","name":"Main"}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.in)
		if err != nil || string(b) != c.want {
			t.Errorf("%+v encodes %s %v, want %s", c.in, b, err, c.want)
		}
	}
}
