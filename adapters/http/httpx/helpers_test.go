package httpx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

// fakeAuth knows a fixed set of keys.
type fakeAuth map[string]accounts.Principal

func (f fakeAuth) Authenticate(_ context.Context, key string) (accounts.Principal, error) {
	switch key {
	case "unpaid":
		return accounts.Principal{}, platform.NewError(platform.KindPaymentRequired, platform.CodePremiumRequired, "the account is not on the Premium plan", nil)
	case "broken":
		return accounts.Principal{}, errors.New("dial tcp 10.0.0.1:5432: connection refused")
	}
	p, ok := f[key]
	if !ok {
		return accounts.Principal{}, platform.NewError(platform.KindUnauthorized, platform.CodeUnauthorized, "invalid or revoked API key", nil)
	}
	return p, nil
}

var testAuth = fakeAuth{
	"reader": {AccountID: "acc_1", KeyID: "key_r", Scopes: accounts.NewScopeSet([]accounts.Scope{accounts.ScopeQueuesRead})},
	"writer": {AccountID: "acc_1", KeyID: "key_w", Scopes: accounts.NewScopeSet([]accounts.Scope{accounts.ScopeQueuesWrite})},
	"other":  {AccountID: "acc_2", KeyID: "key_o", Scopes: accounts.NewScopeSet([]accounts.Scope{accounts.ScopeQueuesWrite})},
}

// fakeLimiter counts per key in one fixed window.
type fakeLimiter struct {
	mu    sync.Mutex
	count map[string]int
	reset time.Time
	err   error
}

func (*fakeLimiter) PruneRateLimits(context.Context, time.Time, int) (int, error) { return 0, nil }

func (l *fakeLimiter) Allow(_ context.Context, key string, limit int, _ time.Time) (ports.RateDecision, error) {
	if l.err != nil {
		return ports.RateDecision{}, l.err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == nil {
		l.count = map[string]int{}
	}
	l.count[key]++
	n := l.count[key]
	return ports.RateDecision{Allowed: n <= limit, Limit: limit, Remaining: limit - n, Reset: l.reset}, nil
}

// syncBuffer is a log sink safe for the server goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestApp(t *testing.T, cfg AppConfig) (*fiber.App, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	return NewApp(cfg), logs
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, app *fiber.App, method, target string, body string, headers ...string) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	// The origin form with a Host header, as a client sends it: an absolute
	// target would go out without one, which fasthttp refuses (RFC 9112 3.2).
	req.RequestURI = req.URL.RequestURI()
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

type errorEnvelope struct {
	Error struct {
		Code      string         `json:"code"`
		Message   string         `json:"message"`
		Details   map[string]any `json:"details"`
		RequestID string         `json:"requestId"`
	} `json:"error"`
}

// fields is the failing fields of a VALIDATION_ERROR envelope, as sent,
// read by the SDK's accessor (client.Error.FieldErrors): the one reader of
// details.fields on the wire.
func (e errorEnvelope) fields() []client.FieldError {
	ce := client.Error{Code: e.Error.Code, Details: e.Error.Details}
	return ce.FieldErrors()
}

// envelopeOf parses an error body strictly: the envelope has exactly the
// members of spec section 7.
func envelopeOf(t *testing.T, r response) errorEnvelope {
	t.Helper()
	var e errorEnvelope
	if err := json.Unmarshal(r.body, &e, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not an error envelope: %v: %s", err, r.body)
	}
	if e.Error.Details == nil {
		t.Errorf("details is not an object: %s", r.body)
	}
	if e.Error.RequestID == "" || e.Error.RequestID != r.header.Get(HeaderRequestID) {
		t.Errorf("requestId %q != header %q", e.Error.RequestID, r.header.Get(HeaderRequestID))
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q", ct)
	}
	return e
}

func expectError(t *testing.T, r response, status int, code string) errorEnvelope {
	t.Helper()
	if r.status != status {
		t.Errorf("status = %d, want %d: %s", r.status, status, r.body)
	}
	e := envelopeOf(t, r)
	if e.Error.Code != code {
		t.Errorf("code = %q, want %q: %s", e.Error.Code, code, r.body)
	}
	return e
}

// serve sends one request through a real fasthttp server on an in-memory
// listener, for behaviour app.Test does not reproduce (server-level errors).
func serve(t *testing.T, app *fiber.App, method, target, body string, headers ...string) response {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return ln.Dial() },
	}}
	req, err := http.NewRequest(method, "http://qms.test"+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func jsonPointer(s string) jsontext.Pointer { return jsontext.Pointer(s) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
