// Package apptest starts a whole qms process in a test, in memory or on a
// fresh Postgres database, listening on a loopback port, with a premium
// account and a key holding every scope: the path a user takes, end to end.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/bootstrap"
	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/test/pgtest"
)

// AdminToken is the admin token of every test process.
const AdminToken = "test-admin-token-0123456789"

// SecretKey seals webhook signing secrets in the processes tests start.
const SecretKey = "test-webhooks-secret-key-0123456789abcdef"

// App is a running qms process.
type App struct {
	T         testing.TB
	BaseURL   string
	AccountID string
	Key       string // a premium key with every scope
	Config    *config.Config
	// Fiber is the process's HTTP app, for benchmarks that call its
	// handler without a socket in between.
	Fiber *fiber.App
	// Server is the process's HTTP server (its open connections).
	Server *server.Server
	stop   func()
}

// Settings is what an Option can change before start.
type Settings struct {
	Config *config.Config
	Clock  platform.Clock
	// DBTracer sees every statement the process sends to PostgreSQL.
	DBTracer pgx.QueryTracer
	// LogOutput, when set, receives the process's log as `qms serve`
	// writes it (bootstrap's logger at the configured level and format),
	// instead of the tests' quiet text logger.
	LogOutput io.Writer
	// Unscribbled leaves requests' bytes alone after their responses
	// (httpx.ScribbleRequests, on by default): for benchmarks that time
	// or count the CPU of requests, which the scribbling would add to.
	Unscribbled bool
}

// Option adjusts the settings before start.
type Option func(*Settings)

// Memory starts a process on the in-memory adapters.
func Memory(t testing.TB, opts ...Option) *App {
	return start(t, config.StorageMemory, "", opts...)
}

// Postgres starts a process on a fresh, migrated Postgres database.
func Postgres(t testing.TB, opts ...Option) *App {
	return start(t, config.StoragePostgres, pgtest.URL(t), opts...)
}

// PostgresAt starts a process on an existing database (several processes on
// one database).
func PostgresAt(t testing.TB, url string, opts ...Option) *App {
	return start(t, config.StoragePostgres, url, opts...)
}

// Storages runs f once per adapter set: the same scenario on memory and on
// Postgres.
func Storages(t *testing.T, f func(t *testing.T, start func(t testing.TB, opts ...Option) *App)) {
	t.Run("memory", func(t *testing.T) { f(t, Memory) })
	t.Run("postgres", func(t *testing.T) { f(t, Postgres) })
}

// WithClock makes the process read time from clock.
func WithClock(clock platform.Clock) Option {
	return func(s *Settings) { s.Clock = clock }
}

// WithDBTracer hands every statement the process sends to PostgreSQL to
// tr (round-trip budgets).
func WithDBTracer(tr pgx.QueryTracer) Option {
	return func(s *Settings) { s.DBTracer = tr }
}

// WithProcessLog logs as `qms serve` does, at the default level (info, so
// one access line per request) and format, into w: benchmarks that count
// what the log costs a request.
func WithProcessLog(w io.Writer) Option {
	return func(s *Settings) {
		s.LogOutput = w
		s.Config.Log.Level = "info"
	}
}

// Unscribbled is Settings.Unscribbled: for benchmarks only, every test
// runs with the scribbling.
func Unscribbled() Option {
	return func(s *Settings) { s.Unscribbled = true }
}

// WithConfig changes the configuration.
func WithConfig(f func(*config.Config)) Option {
	return func(s *Settings) { f(s.Config) }
}

func start(t testing.TB, storage, url string, opts ...Option) *App {
	t.Helper()
	env := []string{
		"QMS_STORAGE=" + storage,
		"QMS_HTTP_ADDR=127.0.0.1:0",
		"QMS_ADMIN_TOKEN=" + AdminToken,
		"QMS_WEBHOOKS_SECRET_KEY=" + SecretKey, // required in postgres mode
		"QMS_WEBHOOKS_ALLOW_PRIVATE=true",
		"QMS_LOG_LEVEL=warn",
	}
	if url != "" {
		env = append(env, "QMS_DATABASE_URL="+url)
	}
	cfg, err := config.Load("", env)
	if err != nil {
		t.Fatalf("apptest: config: %v", err)
	}
	cfg.BootstrapDemo = false
	set := &Settings{Config: cfg}
	for _, o := range opts {
		o(set)
	}
	logOut := io.Discard
	if os.Getenv("QMS_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	bo := bootstrap.Options{
		Clock:    set.Clock,
		DBTracer: set.DBTracer,
		Logger:   slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Stdout:   io.Discard,
	}
	if set.LogOutput != nil {
		bo.Logger, bo.LogOutput = nil, set.LogOutput
	}
	app, srv := bootstrap.New(cfg, bo)
	// Every request's bytes are overwritten once it is answered: a
	// handler that keeps a value of the request without copying it
	// reads '#'s in the test that follows (docs/decisions.md, "Fiber's
	// Immutable is off; handlers copy what they keep").
	if !set.Unscribbled {
		httpx.ScribbleRequests(srv.App)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("apptest: start: %v", err)
	}
	a := &App{T: t, BaseURL: "http://" + srv.Addr, Config: cfg, Fiber: srv.App, Server: srv}
	a.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Logf("apptest: stop: %v", err)
		}
	}
	t.Cleanup(a.Stop)
	a.AccountID, a.Key = a.NewAccount("premium", "all")
	return a
}

// Stop stops the process; calling it twice is harmless.
func (a *App) Stop() {
	if a.stop != nil {
		a.stop()
		a.stop = nil
	}
}

// NewAccount creates an account on plan and a key with the given scopes
// ("all", or a comma-separated list), through the admin API. Keys are made
// only for premium accounts, so for another plan the account is created on
// premium, given its key, and then moved to plan.
func (a *App) NewAccount(plan, scopes string) (accountID, key string) {
	a.T.Helper()
	var acc struct{ ID string }
	a.Admin(http.MethodPost, "/admin/v1/accounts", map[string]any{"name": "Test", "plan": "premium"}, &acc)
	key = a.NewKey(acc.ID, scopes) // keys are created on premium only
	if plan != "premium" {
		a.Admin(http.MethodPut, "/admin/v1/accounts/"+acc.ID+"/plan", map[string]any{"plan": plan}, nil)
	}
	return acc.ID, key
}

// NewKey creates a key of the account with the given scopes.
func (a *App) NewKey(accountID, scopes string) string {
	a.T.Helper()
	list := strings.Split(scopes, ",")
	if scopes == "all" {
		list = accounts.AllScopeNames()
	}
	var k struct{ Key string }
	a.Admin(http.MethodPost, "/admin/v1/accounts/"+accountID+"/api-keys", map[string]any{"scopes": list}, &k)
	return k.Key
}

// Admin calls the admin API and decodes a 2xx answer into out.
func (a *App) Admin(method, path string, body, out any) {
	a.T.Helper()
	resp := a.Do(method, path, body, map[string]string{"Authorization": "Bearer " + AdminToken})
	if resp.Status >= 300 {
		a.T.Fatalf("apptest: %s %s: %d %s", method, path, resp.Status, resp.Body)
	}
	resp.Decode(out)
}

// Response is a finished HTTP exchange.
type Response struct {
	T      testing.TB
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into out (nil: nothing).
func (r *Response) Decode(out any) {
	r.T.Helper()
	if out == nil {
		return
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		r.T.Fatalf("apptest: decode %s: %v", r.Body, err)
	}
}

// JSON returns the body as a generic map.
func (r *Response) JSON() map[string]any {
	var m map[string]any
	r.Decode(&m)
	return m
}

// ErrorCode returns error.code of an error envelope.
func (r *Response) ErrorCode() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

// FieldErrors returns the failing fields of a VALIDATION_ERROR answer (nil
// for any other), read by the SDK's accessor (client.Error.FieldErrors):
// the end-to-end tests' one reader of details.fields on the wire.
func (r *Response) FieldErrors() []client.FieldError {
	var env struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &env)
	e := client.Error{Code: env.Error.Code, Details: env.Error.Details}
	if e.Code != "VALIDATION_ERROR" {
		return nil
	}
	return e.FieldErrors()
}

// FieldPaths are the paths of FieldErrors, in the answer's order.
func (r *Response) FieldPaths() []string {
	var out []string
	for _, f := range r.FieldErrors() {
		out = append(out, f.Path)
	}
	return out
}

// Do sends a request with a JSON body (a string or []byte is sent as is)
// and extra headers.
func (a *App) Do(method, path string, body any, headers map[string]string) *Response {
	a.T.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			a.T.Fatalf("apptest: encode: %v", err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, a.BaseURL+path, r)
	if err != nil {
		a.T.Fatalf("apptest: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatalf("apptest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := &Response{T: a.T, Status: resp.StatusCode, Header: resp.Header, Body: b}
	if Check != nil {
		Check(a.T, req, out)
	}
	return out
}

// Check, when set (by the OpenAPI contract package), checks every exchange
// against the published document.
var Check func(t testing.TB, req *http.Request, resp *Response)

// API calls /api/v1 with the app's key.
func (a *App) API(method, path string, body any) *Response {
	a.T.Helper()
	return a.Do(method, "/api/v1"+path, body, map[string]string{"X-API-Key": a.Key})
}

// APIWith calls /api/v1 with another key.
func (a *App) APIWith(key, method, path string, body any) *Response {
	a.T.Helper()
	return a.Do(method, "/api/v1"+path, body, map[string]string{"X-API-Key": key})
}

// Must fails the test unless the response has the wanted status, and
// decodes the body into out.
func (r *Response) Must(status int, out any) *Response {
	r.T.Helper()
	if r.Status != status {
		r.T.Fatalf("want %d, got %d: %s", status, r.Status, r.Body)
	}
	r.Decode(out)
	return r
}
