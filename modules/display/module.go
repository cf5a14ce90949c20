// Package display wires the display board: display tokens under /api/v1
// and the boards under /display. The storage provides the token
// repository and display.Calls (its stream log).
package display

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/displayhttp"
	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/appointments"
	core "github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/ports"
)

// Module provides the display service and mounts its routes.
var Module = fx.Module("display",
	fx.Provide(
		core.NewService,
		func(s *queues.Service) core.Queues { return s },
		func(s *turns.Service) core.Turns { return s },
	),
	// The board counts HYBRID appointments waiting to join as waiting.
	fx.Invoke(func(svc *core.Service, apts appointments.Repository) { svc.UseJoining(apts) }),
	fx.Invoke(func(srv *server.Server, svc *core.Service, hub *stream.Hub, lim ports.RateLimiter, cfg *config.Config,
		clock platform.Clock, log *slog.Logger) {
		displayhttp.RegisterAPI(srv.API, svc, srv.Cursors)
		// The boards take no key: they are rate limited by client address,
		// in a budget of their own, so other keyless traffic from the same
		// address (a whole site behind one proxy) cannot cut them off.
		limit := httpx.RateLimitBudget(lim, cfg.RateLimit.PerMinute, clock.Now, "display")
		displayhttp.RegisterBoard(srv.App, svc, hub, limit, log.With("module", "display"), displayhttp.Options{})
	}),
)
