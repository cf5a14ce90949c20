package httpx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

var errDBDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused (secret detail)")

func TestUnavailableStorageIs503WithRetryAfter(t *testing.T) {
	app, logs := newTestApp(t, AppConfig{Unavailable: func(err error) bool { return errors.Is(err, errDBDown) }})
	app.Get("/down", func(*fiber.Ctx) error { return fmt.Errorf("load queue: %w", errDBDown) })
	app.Get("/deadline", func(*fiber.Ctx) error { return fmt.Errorf("load queue: %w", context.DeadlineExceeded) })
	app.Get("/kind", func(*fiber.Ctx) error {
		return platform.NewError(platform.KindUnavailable, platform.CodeUnavailable, "storage is away", nil)
	})
	app.Get("/other", func(*fiber.Ctx) error { return errors.New("a bug (secret detail)") })
	for path, status := range map[string]int{"/down": 503, "/deadline": 503, "/kind": 503, "/other": 500} {
		r := do(t, app, "GET", path, "")
		code := map[int]string{503: "SERVICE_UNAVAILABLE", 500: "INTERNAL_ERROR"}[status]
		expectError(t, r, status, code)
		if got := r.header.Get("Retry-After"); (status == 503) != (got == "2") {
			t.Errorf("%s: Retry-After %q", path, got)
		}
		if strings.Contains(string(r.body), "secret") {
			t.Errorf("%s: cause leaked: %s", path, r.body)
		}
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the cause of a 503 is not logged: %s", logs)
	}
}

func TestUnavailableAuthenticatorIs503(t *testing.T) {
	app, _ := newTestApp(t, AppConfig{Unavailable: func(err error) bool { return strings.Contains(err.Error(), "connection refused") }})
	app.Use(Auth(testAuth))
	app.Get("/q", func(c *fiber.Ctx) error { return c.SendString("ok") })
	expectError(t, do(t, app, "GET", "/q", "", HeaderAPIKey, "broken"), 503, "SERVICE_UNAVAILABLE")
}

func TestDeadlineEndsTheRequestContext(t *testing.T) {
	app, _ := newTestApp(t, AppConfig{RequestTimeout: 50 * time.Millisecond})
	var stopped time.Duration
	work := func(c *fiber.Ctx) error {
		start := time.Now()
		select {
		case <-c.UserContext().Done():
			stopped = time.Since(start)
			return c.UserContext().Err()
		case <-time.After(5 * time.Second):
			return c.SendString("too late")
		}
	}
	app.Get("/slow", work)
	app.Get("/slow/events", func(c *fiber.Ctx) error {
		if _, ok := c.UserContext().Deadline(); ok {
			return errors.New("an event stream got a deadline")
		}
		return c.SendString("streaming")
	})
	r := do(t, app, "GET", "/slow", "")
	expectError(t, r, 503, "SERVICE_UNAVAILABLE")
	if stopped < 40*time.Millisecond || stopped > 2*time.Second {
		t.Fatalf("the work stopped after %v, want about 50ms", stopped)
	}
	if r := do(t, app, "GET", "/slow/events", ""); r.status != 200 {
		t.Fatalf("event stream: %d %s", r.status, r.body)
	}
}
