// Package display wires the display board: display tokens under /api/v1
// and the boards under /display. The storage provides the token
// repository and display.Calls (its stream log).
package display

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/displayhttp"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/core/appointments"
	core "github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
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
	fx.Invoke(func(srv *server.Server, svc *core.Service, hub *stream.Hub, log *slog.Logger) {
		displayhttp.RegisterAPI(srv.API, svc, srv.Cursors)
		// The boards take no key: they are rate limited per token, and per
		// client address for the whole waiting room, apart from other
		// keyless traffic (a whole site behind one proxy cannot cut them off).
		displayhttp.RegisterBoard(srv.App, svc, hub, srv.TokenLimit("display", "token"), log.With("module", "display"), displayhttp.Options{})
	}),
)
