// Package server owns the HTTP server of a qms process: the fiber app with the
// platform middleware, the authenticated /api/v1 router that modules mount
// their routes on, health endpoints, and the listener's life cycle.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/openapi"
	"github.com/qms-dev/qms/adapters/http/signed"
	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

// Server is what modules need to mount routes.
type Server struct {
	App        *fiber.App
	API        fiber.Router // /api/v1, authenticated and rate limited
	Cursors    httpx.Cursors
	AdminToken string
	// Addr is the address the listener is bound to, known after start.
	Addr     string
	listener *guarded
	// Tokens is the budget of the keyless routes a token opens (ticket
	// pages, display boards, join and counter links): see TokenLimit.
	Tokens httpx.TokenBudget
}

// TokenLimit is the rate limit of a keyless route opened by the token in
// its route parameter param: per token (budget names the kind: "ticket",
// "display", "join"...) and per client address for all such routes
// together (docs/live.md, "Rate limits of the waiting room"). Static
// files need none (httpx.AssetSet).
func (s *Server) TokenLimit(budget, param string) fiber.Handler { return s.Tokens.Limit(budget, param) }

// Params are the server's dependencies.
type Params struct {
	fx.In
	Config  *config.Config
	Log     *slog.Logger
	Auth    httpx.Authenticator
	Limiter ports.RateLimiter
	Pinger  ports.Pinger
	Faults  ports.FaultClassifier
	Clock   platform.Clock
	Token   AdminToken
	// Metrics, when the metrics module runs, records every request.
	Metrics fiber.Handler `name:"http_metrics" optional:"true"`
	// Shutdowner ends the process when the listener fails for good.
	Shutdowner fx.Shutdowner
}

// AdminToken is the effective admin token (configured or generated).
type AdminToken string

// New builds the server; routes are added by the modules' invokes, and the
// listener starts with the application.
func New(p Params, lc fx.Lifecycle) *Server {
	hc := p.Config.HTTP
	var then []fiber.Handler
	if p.Metrics != nil {
		then = append(then, p.Metrics)
	}
	trusted, _ := config.ParseTrustedProxies(hc.TrustedProxies) // validated with the configuration
	app := httpx.NewApp(httpx.AppConfig{Logger: p.Log, BodyLimit: hc.BodyLimitBytes, HeaderLimit: hc.HeaderLimitBytes, Timeouts: httpx.Timeouts{
		ReadHeader: hc.ReadHeaderTimeout, Read: hc.ReadTimeout, Write: hc.WriteTimeout, Idle: hc.IdleTimeout,
	}, Proxies: httpx.Proxies{PublicURL: strings.TrimSuffix(hc.PublicURL, "/"), Trusted: trusted},
		RequestTimeout: hc.RequestTimeout, Unavailable: p.Faults.Unavailable, Then: then})
	var open conns
	app.Server().ConnState = open.track
	app.Get("/healthz", func(c *fiber.Ctx) error { return httpx.OK(c, fiber.Map{"status": "ok"}) })
	app.Get("/readyz", func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
		defer cancel()
		if err := p.Pinger.Ping(ctx); err != nil {
			// A standby or read-only database answers, but this process
			// cannot serve writes from it: not ready either.
			storage := "unreachable"
			if errors.Is(err, ports.ErrReadOnly) {
				storage = "read-only"
			}
			p.Log.Warn("readyz: storage "+storage, "err", err)
			return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable", "storage": storage})
		}
		return httpx.OK(c, fiber.Map{"status": "ready"})
	})
	srv := &Server{App: app, AdminToken: string(p.Token), Cursors: httpx.NewCursors(cursorSecret(p.Config, string(p.Token))),
		Tokens: httpx.TokenBudget{Address: p.Limiter, Tokens: memory.NewRateLimiter(),
			PerAddress: max(p.Config.RateLimit.WaitingRoomPerMinute, p.Config.RateLimit.PerMinute),
			PerToken:   p.Config.RateLimit.PerTokenPerMinute, Now: p.Clock.Now}}
	// The published contract needs no key, so it is mounted before the
	// authenticated group; it is still rate limited, by client address.
	// On the system clock, the rate limit takes the request's start
	// (nil): one reading of the clock less per request (~100 ns on the
	// project's VM, issue 30). A test's clock is read as before.
	limitNow := p.Clock.Now
	if _, system := p.Clock.(platform.SystemClock); system {
		limitNow = nil
	}
	app.Get(openapi.Path, httpx.RateLimit(p.Limiter, p.Config.RateLimit.PerMinute, limitNow), openapi.Handler())
	srv.API = app.Group("/api/v1", httpx.Guard(p.Auth, p.Limiter, p.Config.RateLimit.PerMinute, limitNow))

	var stopping atomic.Bool
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			app.Use(httpx.NotFound())
			ln, err := net.Listen("tcp", p.Config.HTTP.Addr)
			if err != nil {
				return fmt.Errorf("listen on %s (QMS_HTTP_ADDR): %w", p.Config.HTTP.Addr, err)
			}
			srv.Addr = ln.Addr().String()
			files := raiseFileLimit()
			maxConns := hc.MaxConnections
			if maxConns == 0 {
				maxConns = connectionCap(files)
			}
			g := newGuarded(ln, maxConns, p.Log)
			srv.listener = g
			go func() {
				err := app.Listener(g)
				if stopping.Load() {
					return
				}
				// The listener stopped while the process was not: it would
				// stay up holding its streams and accepting nothing. End it,
				// so that its supervisor starts it again.
				p.Log.Error("http: the listener stopped for good; ending the process", "err", err)
				_ = p.Shutdowner.Shutdown(fx.ExitCode(1))
			}()
			p.Log.Info("listening", "addr", srv.Addr, "maxConnections", maxConns, "fileLimit", files)
			return nil
		},
		OnStop: func(ctx context.Context) error {
			stopping.Store(true)
			// Stop accepting, close idle connections, let requests in
			// flight finish; a second before the stop's deadline (the
			// shutdown timeout), close whatever is still open, so that
			// slow clients cannot hold the process past it.
			grace := hc.ShutdownTimeout
			if deadline, ok := ctx.Deadline(); ok {
				grace = min(grace, time.Until(deadline))
			}
			grace = max(grace-time.Second, grace/2)
			sctx, cancel := context.WithTimeout(ctx, grace)
			defer cancel()
			if err := app.ShutdownWithContext(sctx); err != nil {
				p.Log.Warn("http: closed the connections still open at the end of the shutdown timeout",
					"connections", open.closeAll(), "waited", grace.String())
			}
			return nil
		},
	})
	return srv
}

// OpenConnections is the number of connections open now (0 before the
// server starts).
func (s *Server) OpenConnections() int {
	if s.listener == nil {
		return 0
	}
	return s.listener.Open()
}

// connectionCap is the connections the server holds at once with files
// open files allowed: a tenth of them (at least 128) is left for the
// database pool, the log and the rest, so that an accept never fails for
// want of a file descriptor. Unknown (0): no cap to speak of.
func connectionCap(files int) int {
	if files <= 0 {
		return 1 << 20
	}
	return max(files-max(files/10, 128), 16)
}

// cursorSecret is the configured cursor key, or one derived from the admin
// token so that every process of a deployment signs cursors alike.
func cursorSecret(c *config.Config, adminToken string) []byte {
	if c.Cursor.Secret != "" {
		return []byte(c.Cursor.Secret)
	}
	return signed.Derive(adminToken, "qms pagination cursors")
}
