package httpx

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/ports"
)

// unlimited is a limiter that always allows, so the benchmark measures the
// chain, not a window running out.
type unlimited struct{ reset time.Time }

func (unlimited) PruneRateLimits(context.Context, time.Time, int) (int, error) { return 0, nil }

func (u unlimited) Allow(context.Context, string, int, time.Time) (ports.RateDecision, error) {
	return ports.RateDecision{Allowed: true, Limit: 120, Remaining: 119, Reset: u.reset}, nil
}

func benchApp() *fiber.App {
	app := NewApp(AppConfig{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	api := app.Group("/api/v1", Auth(testAuth), RateLimit(unlimited{reset: time.Now().Add(time.Minute)}, 120, nil))
	api.Get("/queues/:queueId", Require(accounts.ScopeQueuesRead), func(c *fiber.Ctx) error {
		return OK(c, struct {
			ID   string `json:"id"`
			Name string `json:"name"`
			Open bool   `json:"open"`
		}{c.Params("queueId"), "Front desk", true})
	})
	app.Use(NotFound())
	return app
}

// BenchmarkAuthenticatedGET measures an authenticated GET through the whole
// platform chain: request id, access log (to io.Discard), recover, auth
// with an in-memory authenticator, rate limit, scope check and a small JSON
// response.
//
// "handler" calls the fiber handler directly on a reused fasthttp
// RequestCtx: the chain alone. "inmemory" goes through a real fasthttp
// server and client over fasthttputil's in-memory listener: the chain plus
// HTTP parsing and writing on both sides, without app.Test's per-request
// connection and goroutine.
func BenchmarkAuthenticatedGET(b *testing.B) {
	b.Run("handler", func(b *testing.B) {
		h := benchApp().Handler()
		var ctx fasthttp.RequestCtx
		var req fasthttp.Request
		req.Header.SetMethod("GET")
		req.SetRequestURI("/api/v1/queues/que_01JABCDEFGHJKMNPQRSTVWXYZ0")
		req.Header.Set(HeaderAPIKey, "reader")
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			ctx.Response.Reset()
			h(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
	b.Run("inmemory", func(b *testing.B) {
		app := benchApp()
		ln := fasthttputil.NewInmemoryListener()
		go func() { _ = app.Listener(ln) }()
		defer func() { _ = app.Shutdown() }()
		client := &fasthttp.HostClient{Addr: "qms.test", Dial: func(string) (net.Conn, error) { return ln.Dial() }}
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.Header.SetMethod("GET")
		req.SetRequestURI("http://qms.test/api/v1/queues/que_01JABCDEFGHJKMNPQRSTVWXYZ0")
		req.Header.Set(HeaderAPIKey, "reader")
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := client.Do(req, res); err != nil {
				b.Fatal(err)
			}
			if res.StatusCode() != 200 {
				b.Fatalf("status %d: %s", res.StatusCode(), res.Body())
			}
		}
	})
}
