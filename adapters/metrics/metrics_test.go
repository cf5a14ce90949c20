package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/metrics"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

// budget allows n requests in all, then refuses.
type budget struct{ n int }

func (*budget) PruneRateLimits(context.Context, time.Time, int) (int, error) { return 0, nil }

func (b *budget) Allow(_ context.Context, _ string, limit int, now time.Time) (ports.RateDecision, error) {
	b.n--
	return ports.RateDecision{Allowed: b.n >= 0, Limit: limit, Remaining: b.n, Reset: now.Add(time.Minute)}, nil
}

func newApp(m *metrics.Metrics, allowed int) *fiber.App {
	app := httpx.NewApp(httpx.AppConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	app.Use(m.Middleware())
	app.Get("/metrics", m.Handler())
	api := app.Group("/api/v1", httpx.RateLimit(&budget{n: allowed}, 100, nil))
	api.Get("/turns/:turnId", func(c *fiber.Ctx) error { return httpx.OK(c, fiber.Map{"id": c.Params("turnId")}) })
	api.Post("/turns/:turnId/call", func(c *fiber.Ctx) error {
		return platform.NewError(platform.KindConflict, "INVALID_TRANSITION", "no", nil)
	})
	api.Get("/boom", func(c *fiber.Ctx) error { panic("boom") })
	return app
}

func do(t *testing.T, app *fiber.App, method, path string) int {
	t.Helper()
	resp, err := app.Test(httptest.NewRequest(method, path, nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func scrape(t *testing.T, app *fiber.App) string {
	t.Helper()
	resp, err := app.Test(httptest.NewRequest("GET", "/metrics", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// value returns the sample of the exposition line that starts with series
// (name and labels exactly as written), or -1 when absent.
func value(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

func TestRequestsByRouteTemplateMethodAndStatus(t *testing.T) {
	m := metrics.New()
	app := newApp(m, 100)
	for _, id := range []string{"turn_a", "turn_b", "turn_c"} {
		if got := do(t, app, "GET", "/api/v1/turns/"+id); got != 200 {
			t.Fatalf("GET: %d", got)
		}
	}
	if got := do(t, app, "POST", "/api/v1/turns/turn_a/call"); got != 409 {
		t.Fatalf("POST call: %d", got)
	}
	if got := do(t, app, "GET", "/api/v1/boom"); got != 500 {
		t.Fatalf("panic: %d", got)
	}
	if got := do(t, app, "GET", "/nowhere/turn_secret"); got != 404 {
		t.Fatalf("unknown path: %d", got)
	}
	// fasthttp refuses unknown methods before any middleware; were one to
	// get through, it would be labelled OTHER, never by its name.
	if got := do(t, app, "BREW", "/api/v1/turns/turn_a"); got < 400 {
		t.Fatalf("odd method: %d", got)
	}
	text := scrape(t, app)

	for series, want := range map[string]float64{
		`qms_http_requests_total{method="GET",route="/api/v1/turns/:turnId",status="200"}`:                 3,
		`qms_http_requests_total{method="POST",route="/api/v1/turns/:turnId/call",status="409"}`:           1,
		`qms_http_requests_total{method="GET",route="/api/v1/boom",status="500"}`:                          1,
		`qms_http_requests_total{method="GET",route="-",status="404"}`:                                     1,
		`qms_http_request_duration_seconds_count{method="GET",route="/api/v1/turns/:turnId",status="200"}`: 3,
	} {
		if got := value(text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	// Ids of the requests never become label values.
	for _, leak := range []string{"turn_a", "turn_b", "turn_secret", "BREW"} {
		if strings.Contains(text, leak) {
			t.Errorf("the exposition contains %q:\n%s", leak, grep(text, leak))
		}
	}
	if value(text, "go_goroutines") < 1 || !strings.Contains(text, "process_") {
		t.Error("Go runtime and process metrics are missing")
	}
}

func TestRateLimitRejectionsAreCounted(t *testing.T) {
	m := metrics.New()
	app := newApp(m, 2)
	statuses := []int{}
	for i := 0; i < 5; i++ {
		statuses = append(statuses, do(t, app, "GET", "/api/v1/turns/turn_"+strconv.Itoa(i)))
	}
	text := scrape(t, app)
	if got := value(text, `qms_http_rate_limited_total`); got != 3 {
		t.Fatalf("rate_limited_total = %v after statuses %v, want 3\n%s", got, statuses, grep(text, "rate_limited"))
	}
	// The limiter refuses before routing: the route is the group's prefix.
	if got := value(text, `qms_http_requests_total{method="GET",route="/api/v1",status="429"}`); got != 3 {
		t.Fatalf("429s = %v\n%s", got, grep(text, "429"))
	}
}

func TestWebhookDeliveries(t *testing.T) {
	m := metrics.New()
	var obs ports.DeliveryObserver = m
	obs.DeliveryFinished(metrics.DeliverySucceeded, 300*time.Millisecond)
	obs.DeliveryFinished(metrics.DeliverySucceeded, 2*time.Second)
	obs.DeliveryFinished(metrics.DeliveryFailed, time.Second)
	obs.DeliveryFinished(metrics.DeliveryDiscarded, time.Hour)
	obs.DeliveryFinished("whe_01J_endpoint_id", time.Second) // never a label value
	text := scrape(t, newApp(m, 10))
	for series, want := range map[string]float64{
		`qms_webhook_deliveries_total{outcome="succeeded"}`:                      2,
		`qms_webhook_deliveries_total{outcome="failed"}`:                         1,
		`qms_webhook_deliveries_total{outcome="discarded"}`:                      1,
		`qms_webhook_deliveries_total{outcome="other"}`:                          1,
		`qms_webhook_delivery_lag_seconds_bucket{outcome="succeeded",le="0.5"}`:  1,
		`qms_webhook_delivery_lag_seconds_bucket{outcome="succeeded",le="2.5"}`:  2,
		`qms_webhook_delivery_lag_seconds_sum{outcome="discarded"}`:              3600,
		`qms_metrics_unknown_label_total{metric="qms_webhook_deliveries_total"}`: 1,
	} {
		if got := value(text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if strings.Contains(text, "whe_01J") {
		t.Error("an unknown outcome became a label value")
	}
}

func grep(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSeriesOfOneRouteByStatus interleaves statuses and methods on one
// route template: each (route, method, status) is its own series, however
// the resolved series are cached.
func TestSeriesOfOneRouteByStatus(t *testing.T) {
	m := metrics.New()
	app := httpx.NewApp(httpx.AppConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	app.Use(m.Middleware())
	app.Get("/metrics", m.Handler())
	answer := func(c *fiber.Ctx) error {
		code, _ := strconv.Atoi(c.Params("code"))
		return c.SendStatus(code)
	}
	app.Get("/s/:code", answer)
	app.Post("/s/:code", answer)
	want := map[string]float64{}
	for i := range 12 {
		method, code := []string{"GET", "POST"}[i%2], []string{"200", "201", "409"}[i%3]
		if got := do(t, app, method, "/s/"+code); strconv.Itoa(got) != code {
			t.Fatalf("%s /s/%s: %d", method, code, got)
		}
		want[`qms_http_requests_total{method="`+method+`",route="/s/:code",status="`+code+`"}`]++
		want[`qms_http_request_duration_seconds_count{method="`+method+`",route="/s/:code",status="`+code+`"}`]++
	}
	text := scrape(t, app)
	for series, n := range want {
		if got := value(text, series); got != n {
			t.Errorf("%s = %v, want %v", series, got, n)
		}
	}
}
