// Package server owns the HTTP server of a qms process: the fiber app with the
// platform middleware, the authenticated /api/v1 router that modules mount
// their routes on, health endpoints, and the listener's life cycle.
package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/openapi"
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
	Addr string
}

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
}

// AdminToken is the effective admin token (configured or generated).
type AdminToken string

// New builds the server; routes are added by the modules' invokes, and the
// listener starts with the application.
func New(p Params, lc fx.Lifecycle) *Server {
	hc := p.Config.HTTP
	trusted, _ := config.ParseTrustedProxies(hc.TrustedProxies) // validated with the configuration
	app := httpx.NewApp(httpx.AppConfig{Logger: p.Log, BodyLimit: hc.BodyLimitBytes, HeaderLimit: hc.HeaderLimitBytes, Timeouts: httpx.Timeouts{
		ReadHeader: hc.ReadHeaderTimeout, Read: hc.ReadTimeout, Write: hc.WriteTimeout, Idle: hc.IdleTimeout,
	}, Proxies: httpx.Proxies{PublicURL: strings.TrimSuffix(hc.PublicURL, "/"), Trusted: trusted},
		RequestTimeout: hc.RequestTimeout, Unavailable: p.Faults.Unavailable})
	var open conns
	app.Server().ConnState = open.track
	if p.Metrics != nil {
		app.Use(p.Metrics)
	}
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
	srv := &Server{App: app, AdminToken: string(p.Token), Cursors: httpx.NewCursors(cursorSecret(p.Config, string(p.Token)))}
	// The published contract needs no key, so it is mounted before the
	// authenticated group; it is still rate limited, by client address.
	app.Get(openapi.Path, httpx.RateLimit(p.Limiter, p.Config.RateLimit.PerMinute, p.Clock.Now), openapi.Handler())
	srv.API = app.Group("/api/v1", httpx.Guard(p.Auth, p.Limiter, p.Config.RateLimit.PerMinute, p.Clock.Now))

	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			app.Use(httpx.NotFound())
			ln, err := net.Listen("tcp", p.Config.HTTP.Addr)
			if err != nil {
				return fmt.Errorf("listen on %s (QMS_HTTP_ADDR): %w", p.Config.HTTP.Addr, err)
			}
			srv.Addr = ln.Addr().String()
			go func() {
				if err := app.Listener(ln); err != nil {
					p.Log.Error("http server stopped", "err", err)
				}
			}()
			p.Log.Info("listening", "addr", srv.Addr)
			return nil
		},
		OnStop: func(ctx context.Context) error {
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

// cursorSecret is the configured cursor key, or one derived from the admin
// token so that every process of a deployment signs cursors alike.
func cursorSecret(c *config.Config, adminToken string) []byte {
	if c.Cursor.Secret != "" {
		return []byte(c.Cursor.Secret)
	}
	m := hmac.New(sha256.New, []byte(adminToken))
	m.Write([]byte("qms pagination cursors"))
	return m.Sum(nil)
}
