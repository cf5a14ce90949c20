package httpx

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

func authApp(t *testing.T, lim *fakeLimiter, now func() time.Time) *fiber.App {
	t.Helper()
	app, _ := newTestApp(t, AppConfig{})
	api := app.Group("/api/v1", Auth(testAuth), RateLimit(lim, 3, now))
	api.Get("/queues", Require(accounts.ScopeQueuesRead), func(c *fiber.Ctx) error {
		return OK(c, fiber.Map{"account": PrincipalOf(c).AccountID})
	})
	api.Post("/queues", Require(accounts.ScopeQueuesWrite), func(c *fiber.Ctx) error { return Created(c, fiber.Map{}) })
	api.Get("/queues/:queueId", Require(accounts.ScopeQueuesRead), func(c *fiber.Ctx) error {
		return platform.NotFound("queue", c.Params("queueId"))
	})
	app.Get("/unauthenticated", Require(accounts.ScopeQueuesRead), func(c *fiber.Ctx) error { return nil })
	return app
}

func TestAuth(t *testing.T) {
	app := authApp(t, &fakeLimiter{reset: time.Unix(1_800_000_060, 0)}, nil)

	e := expectError(t, do(t, app, "GET", "/api/v1/queues", ""), 401, "UNAUTHORIZED")
	if e.Error.Message != "missing X-API-Key" {
		t.Errorf("message = %q", e.Error.Message)
	}
	expectError(t, do(t, app, "GET", "/api/v1/queues", "", HeaderAPIKey, "revoked"), 401, "UNAUTHORIZED")
	expectError(t, do(t, app, "GET", "/api/v1/queues", "", HeaderAPIKey, "unpaid"), 402, "PREMIUM_REQUIRED")
	expectError(t, do(t, app, "GET", "/api/v1/queues", "", HeaderAPIKey, "broken"), 500, "INTERNAL_ERROR")

	r := do(t, app, "GET", "/api/v1/queues", "", HeaderAPIKey, "reader")
	if r.status != 200 || string(r.body) != `{"account":"acc_1"}` {
		t.Errorf("reader GET = %d %s", r.status, r.body)
	}
	// Write includes read of the same module.
	if r := do(t, app, "GET", "/api/v1/queues", "", HeaderAPIKey, "writer"); r.status != 200 {
		t.Errorf("writer GET = %d %s", r.status, r.body)
	}

	e = expectError(t, do(t, app, "POST", "/api/v1/queues", "", HeaderAPIKey, "reader"), 403, "INSUFFICIENT_SCOPE")
	if e.Error.Message != "this operation needs the scope queues:write" || e.Error.Details["requiredScope"] != "queues:write" {
		t.Errorf("403 = %+v", e.Error)
	}

	// Require without Auth is a wiring bug, not a client error.
	expectError(t, do(t, app, "GET", "/unauthenticated", ""), 500, "INTERNAL_ERROR")
}

func TestRateLimit(t *testing.T) {
	reset := time.Unix(1_800_000_060, 0)
	now := func() time.Time { return reset.Add(-17500 * time.Millisecond) }
	lim := &fakeLimiter{reset: reset}
	app := authApp(t, lim, now)

	check := func(r response, remaining int) {
		t.Helper()
		if r.header.Get(HeaderRateLimit) != "3" || r.header.Get(HeaderRateRemaining) != strconv.Itoa(remaining) ||
			r.header.Get(HeaderRateReset) != "1800000060" {
			t.Errorf("rate headers = %q %q %q", r.header.Get(HeaderRateLimit), r.header.Get(HeaderRateRemaining), r.header.Get(HeaderRateReset))
		}
	}
	r := do(t, app, "GET", "/api/v1/queues", "", HeaderAPIKey, "reader")
	check(r, 2)
	// Errors raised after the limiter keep the headers.
	r = do(t, app, "GET", "/api/v1/queues/que_1", "", HeaderAPIKey, "reader")
	expectError(t, r, 404, "NOT_FOUND")
	check(r, 1)
	r = do(t, app, "POST", "/api/v1/queues", "", HeaderAPIKey, "reader")
	expectError(t, r, 403, "INSUFFICIENT_SCOPE")
	check(r, 0)

	r = do(t, app, "GET", "/api/v1/queues", "", HeaderAPIKey, "reader")
	e := expectError(t, r, 429, "RATE_LIMITED")
	check(r, 0)
	if got := r.header.Get(HeaderRetryAfter); got != "18" { // 17.5 s rounded up
		t.Errorf("Retry-After = %q", got)
	}
	if e.Error.Details["retryAfter"] != float64(18) || e.Error.Details["limit"] != float64(3) {
		t.Errorf("details = %v", e.Error.Details)
	}

	// The budget is per key: another key of the same account is untouched.
	if r := do(t, app, "GET", "/api/v1/queues", "", HeaderAPIKey, "writer"); r.status != 200 {
		t.Errorf("other key = %d", r.status)
	}
	if lim.count["key_r"] != 4 || lim.count["key_w"] != 1 {
		t.Errorf("counts = %v", lim.count)
	}
}

func TestRateLimitFailsOpen(t *testing.T) {
	lim := &fakeLimiter{err: errors.New("database unreachable")}
	app, logs := newTestApp(t, AppConfig{})
	app.Get("/x", Auth(testAuth), RateLimit(lim, 3, nil), func(c *fiber.Ctx) error { return OK(c, fiber.Map{}) })
	r := do(t, app, "GET", "/x", "", HeaderAPIKey, "reader")
	if r.status != 200 || r.header.Get(HeaderRateLimit) != "" {
		t.Errorf("limiter down: %d, limit header %q", r.status, r.header.Get(HeaderRateLimit))
	}
	if !contains(logs.String(), "database unreachable") {
		t.Errorf("limiter failure not logged")
	}
}
