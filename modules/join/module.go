// Package join wires the public join page: join links under /api/v1, the
// pages under /join, and the ticket page's auto-arrival. The storage
// provides the link repository; turns, tickets, queues and branches are
// read through their services, so every rule of theirs applies.
package join

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/joinhttp"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/adapters/phone"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/entities"
	core "github.com/qms-dev/qms/core/join"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/ports"
)

// Module provides the join service and mounts its routes.
var Module = fx.Module("join",
	fx.Provide(
		func(repo core.Repository, qs *queues.Service, es *entities.Service, ts *turns.Service, tk *ticket.Service,
			uow platform.UnitOfWork, clock platform.Clock) *core.Service {
			return core.NewService(repo, qs, es, ts, tk, phone.Checker{}, uow, clock)
		},
	),
	fx.Invoke(func(srv *server.Server, svc *core.Service, lim ports.RateLimiter, cfg *config.Config, clock platform.Clock) {
		joinhttp.RegisterAPI(srv.API, svc, srv.Cursors)
		// The page's reads ride the waiting-room pages' budget (by
		// address); joins spend two budgets of their own on top.
		limit := httpx.RateLimitBudget(lim, cfg.RateLimit.PerMinute, clock.Now, "display")
		secret := cfg.Cursor.Secret
		if secret == "" {
			secret = srv.AdminToken
		}
		joinhttp.RegisterPage(srv.App, svc, lim, limit, joinhttp.Options{
			PerAddressPerMinute: cfg.Join.PerAddressPerMinute, PerLinkPerMinute: cfg.Join.PerLinkPerMinute,
			CookieKey: joinhttp.DeriveCookieKey(secret), Now: clock.Now,
		})
	}),
)
