// Package counter wires the staff console: counter links under /api/v1
// and the consoles under /counter. The storage provides the link
// repository.
package counter

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/counterhttp"
	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/configs/config"
	core "github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/ports"
)

// links joins the workflow module's two halves the console needs: the
// links of the account, and forwarding a turn through one.
type links struct {
	*workflow.Service
	*workflow.Forwarder
}

// Module provides the counter service and mounts its routes.
var Module = fx.Module("counter",
	fx.Provide(
		core.NewService,
		func(s *queues.Service) core.Queues { return s },
		func(s *turns.Service) core.Turns { return s },
		func(s *workflow.Service, f *workflow.Forwarder) core.Links { return links{s, f} },
	),
	fx.Invoke(func(srv *server.Server, svc *core.Service, hub *stream.Hub, lim ports.RateLimiter, cfg *config.Config,
		clock platform.Clock, log *slog.Logger) {
		counterhttp.RegisterAPI(srv.API, svc, srv.Cursors)
		// The consoles take no key: they are rate limited by client
		// address, in a budget of their own, so the waiting room's screens
		// and phones behind the same address cannot cut the counters off.
		limit := httpx.RateLimitBudget(lim, cfg.RateLimit.PerMinute, clock.Now, "counter")
		counterhttp.RegisterPage(srv.App, svc, hub, limit, log.With("module", "counter"), counterhttp.Options{})
	}),
)
