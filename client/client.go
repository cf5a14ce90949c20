// Package client is the Go SDK of the qms queue management API.
//
//	c := client.New("https://qms.example.com", os.Getenv("QMS_API_KEY"))
//	q, err := c.CreateQueue(ctx, client.QueueCreate{EntityID: ent.ID, Name: "Pharmacy", Type: "TURN"})
//	turn, err := c.CreateTurn(ctx, q.Runs[0].ID, client.TurnCreate{})
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == "QUEUE_CLOSED" { ... }
//
// Every operation of the API has a typed method, generated from the
// service's OpenAPI document (zz_generated.go; `go generate ./client`),
// and the SDK's tests fail when the two differ, so it cannot drift from
// the API. Streams (SubscribeEvents, SubscribeDisplayBoard) are written by
// hand on the same types.
//
// The client:
//   - sets an idempotencyKey on the creates that take one (turns,
//     appointments) when the caller gives none, so a retried create returns
//     the same resource;
//   - retries 429 RATE_LIMITED after its Retry-After, and transient
//     failures (502, 503 SERVICE_UNAVAILABLE, 504, and connections that
//     fail) with exponential backoff and jitter, or the 503's Retry-After
//     when longer, for requests that are safe to repeat: reads,
//     PUT, PATCH and DELETE, and creates carrying an idempotency key;
//     other POSTs are retried only after a 429, which the server answers
//     before doing anything;
//   - returns *Error, with the envelope's code, message, details and
//     requestId, for every error answer.
package client

//go:generate go run ./internal/gen/cmd/qmsgen -o zz_generated.go

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Version is the SDK's version, sent in the User-Agent.
const Version = "1.0.0"

// Retry tunes retries. The zero value takes the defaults.
type Retry struct {
	// MaxAttempts counts the first attempt; 1 disables retries. Default 4.
	MaxAttempts int
	// BaseDelay is the first backoff, doubled per attempt with ±50%
	// jitter. Default 250 ms.
	BaseDelay time.Duration
	// MaxDelay caps one backoff. Default 5 s.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits; a 429
	// asking for longer is returned at once (a 503 asking for longer is
	// retried after the backoff instead). Default 60 s.
	MaxRetryAfter time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 4
	}
	if r.BaseDelay <= 0 {
		r.BaseDelay = 250 * time.Millisecond
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = 5 * time.Second
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = 60 * time.Second
	}
	return r
}

// ClientOption configures a Client or an Admin.
type ClientOption func(*base)

// WithHTTPClient sends requests with hc (timeouts, proxies, transport).
// Streams use it too, so leave its Timeout at zero when you subscribe.
func WithHTTPClient(hc *http.Client) ClientOption { return func(b *base) { b.http = hc } }

// WithRetry tunes retries.
func WithRetry(r Retry) ClientOption { return func(b *base) { b.retry = r.withDefaults() } }

// WithUserAgent adds a product token before the SDK's in User-Agent.
func WithUserAgent(ua string) ClientOption {
	return func(b *base) { b.userAgent = ua + " " + b.userAgent }
}

// base is what Client and Admin share: the transport and the retry loop.
type base struct {
	baseURL   string
	auth      func(h http.Header)
	http      *http.Client
	retry     Retry
	userAgent string
	sleep     func(ctx context.Context, d time.Duration) error
}

func newBase(baseURL string, auth func(http.Header), opts []ClientOption) base {
	b := base{baseURL: strings.TrimRight(baseURL, "/"), auth: auth, http: http.DefaultClient,
		retry: Retry{}.withDefaults(), userAgent: "qms-go/" + Version, sleep: sleepCtx}
	for _, o := range opts {
		o(&b)
	}
	return b
}

// Client calls the API with an API key (X-API-Key).
type Client struct{ base }

// New returns a client of the qms at baseURL (scheme and host, for
// example https://qms.example.com) using apiKey.
func New(baseURL, apiKey string, opts ...ClientOption) *Client {
	return &Client{newBase(baseURL, func(h http.Header) { h.Set("X-API-Key", apiKey) }, opts)}
}

// Admin calls the installation's admin API (/admin/v1: accounts, plans
// and API keys) with the admin token.
type Admin struct{ base }

// NewAdmin returns an admin client of the qms at baseURL.
func NewAdmin(baseURL, token string, opts ...ClientOption) *Admin {
	return &Admin{newBase(baseURL, func(h http.Header) { h.Set("Authorization", "Bearer "+token) }, opts)}
}

// Operation is one operation of the API and the SDK methods that call it
// (see Operations).
type Operation struct {
	ID, Method, Path string
	GoMethods        []string
}

// Operations lists the API's operations as the SDK was generated from,
// with the methods that call each; an operation without methods is one
// the SDK leaves out on purpose (the board's HTML page and assets, the
// Prometheus metrics).
func Operations() []Operation { return append([]Operation(nil), operations...) }

// Error is an error answer of the API: the envelope
// {"error": {"code", "message", "details", "requestId"}} and its status.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the stable error code (VALIDATION_ERROR, QUEUE_CLOSED, ...).
	Code string
	// Message is for people.
	Message string
	// Details are the code's structured details (for VALIDATION_ERROR,
	// fields).
	Details map[string]any
	// RequestID identifies the request in the service's logs; quote it
	// when reporting a problem.
	RequestID string
	// RetryAfter is the wait a 429 asked for.
	RetryAfter time.Duration
	// Operation is the operationId that failed.
	Operation string
}

func (e *Error) Error() string {
	return fmt.Sprintf("qms: %s: %d %s: %s (request %s)", e.Operation, e.StatusCode, e.Code, e.Message, e.RequestID)
}

// IsCode reports whether err is an *Error with the code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// FieldErrors returns the per-field failures of a VALIDATION_ERROR.
func (e *Error) FieldErrors() []FieldError {
	raw, ok := e.Details["fields"].([]any)
	if !ok {
		return nil
	}
	out := make([]FieldError, 0, len(raw))
	for _, r := range raw {
		m, _ := r.(map[string]any)
		f := FieldError{}
		f.Path, _ = m["path"].(string)
		f.Rule, _ = m["rule"].(string)
		f.Message, _ = m["message"].(string)
		out = append(out, f)
	}
	return out
}

// FieldError is one failing field of a VALIDATION_ERROR.
type FieldError struct {
	Path, Rule, Message string
}

// Nullable is an optional request member that may also be sent as null:
// the zero value leaves the member out, Null sends null, Value a value.
// Encode it with encoding/json (the generated types tag it omitzero).
type Nullable[T any] struct {
	set   bool
	null  bool
	value T
}

// Value returns a Nullable holding v.
func Value[T any](v T) Nullable[T] { return Nullable[T]{set: true, value: v} }

// Null returns a Nullable that sends null.
func Null[T any]() Nullable[T] { return Nullable[T]{set: true, null: true} }

// IsZero reports whether the member is left out.
func (n Nullable[T]) IsZero() bool { return !n.set }

// Get returns the value, and false when absent or null.
func (n Nullable[T]) Get() (T, bool) { return n.value, n.set && !n.null }

// MarshalJSON implements json.Marshaler.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.set || n.null {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.set = true
	if string(b) == "null" {
		n.null = true
		return nil
	}
	return json.Unmarshal(b, &n.value)
}

// Ptr returns a pointer to v, for the optional members of request bodies.
func Ptr[T any](v T) *T { return &v }

// NewIdempotencyKey returns a fresh idempotency key ("sdk_" and 32 hex
// characters).
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	if _, err := cryptoRead(b); err != nil {
		panic("client: no randomness: " + err.Error())
	}
	return "sdk_" + hex.EncodeToString(b)
}

var cryptoRead = crand.Read

// request is one call of an operation.
type request struct {
	op, method, path string
	query            url.Values
	header           http.Header
	body             any
	// idempotent marks a POST whose body carries an idempotency key: safe
	// to repeat after any failure.
	idempotent bool
}

func (r request) retrySafe() bool {
	return r.method != http.MethodPost || r.idempotent
}

// do sends r, retrying as the package documentation says, and decodes a
// 2xx JSON answer into out.
func (b *base) do(ctx context.Context, r request, out any) error {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("qms: %s: encode the body: %w", r.op, err)
		}
	}
	u := b.baseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	for attempt := 1; ; attempt++ {
		resp, err := b.send(ctx, r, u, payload)
		if err != nil {
			if ctx.Err() != nil || !r.retrySafe() || attempt >= b.retry.MaxAttempts || !transient(err) {
				return fmt.Errorf("qms: %s: %w", r.op, err)
			}
			if err := b.sleep(ctx, b.backoff(attempt)); err != nil {
				return fmt.Errorf("qms: %s: %w", r.op, err)
			}
			continue
		}
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			if rerr != nil {
				return fmt.Errorf("qms: %s: read the answer: %w", r.op, rerr)
			}
			if out == nil || len(body) == 0 {
				return nil
			}
			if err := json.Unmarshal(body, out); err != nil {
				return fmt.Errorf("qms: %s: decode the answer: %w", r.op, err)
			}
			return nil
		}
		apiErr := decodeError(r.op, resp, body)
		if attempt >= b.retry.MaxAttempts {
			return apiErr
		}
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			wait := apiErr.RetryAfter
			if wait <= 0 {
				wait = b.backoff(attempt)
			}
			if wait > b.retry.MaxRetryAfter {
				return apiErr
			}
			if err := b.sleep(ctx, wait); err != nil {
				return apiErr
			}
		case r.retrySafe() && (resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable ||
			resp.StatusCode == http.StatusGatewayTimeout):
			// A 503 SERVICE_UNAVAILABLE (the database away, or the server's
			// request deadline) says when to come back; retrying sooner only
			// adds to the load that greets the database's return.
			wait := b.backoff(attempt)
			if apiErr.RetryAfter > wait && apiErr.RetryAfter <= b.retry.MaxRetryAfter {
				wait = apiErr.RetryAfter
			}
			if err := b.sleep(ctx, wait); err != nil {
				return apiErr
			}
		default:
			return apiErr
		}
	}
}

func (b *base) send(ctx context.Context, r request, u string, payload []byte) (*http.Response, error) {
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return nil, err
	}
	b.auth(req.Header)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", b.userAgent)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return b.http.Do(req)
}

// backoff is the wait before attempt+1: BaseDelay doubled per attempt,
// capped, with ±50% jitter.
func (b *base) backoff(attempt int) time.Duration {
	d := b.retry.BaseDelay << min(attempt-1, 16)
	if d > b.retry.MaxDelay || d <= 0 {
		d = b.retry.MaxDelay
	}
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

// transient reports whether a transport error may pass on retrying:
// connections refused, reset or timed out; not a malformed URL.
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return !strings.Contains(ue.Err.Error(), "unsupported protocol")
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

func decodeError(op string, resp *http.Response, body []byte) *Error {
	e := &Error{StatusCode: resp.StatusCode, Operation: op, RequestID: resp.Header.Get("X-Request-Id")}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	var env struct {
		Error *struct {
			Code      string         `json:"code"`
			Message   string         `json:"message"`
			Details   map[string]any `json:"details"`
			RequestID string         `json:"requestId"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" {
		e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
		if env.Error.RequestID != "" {
			e.RequestID = env.Error.RequestID
		}
		return e
	}
	// Not the API's envelope (a proxy's page, say).
	e.Code = "HTTP_" + strconv.Itoa(resp.StatusCode)
	e.Message = strings.TrimSpace(string(body))
	if len(e.Message) > 200 {
		e.Message = e.Message[:200]
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
