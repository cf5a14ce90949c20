// Package appointments wires the appointments module: slots, appointments
// and their lifecycle.
package appointments

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/appointmenthttp"
	"github.com/qms-dev/qms/bootstrap/web"
	core "github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/queues"
)

// Module provides the appointments service and mounts its routes. It reads
// queues and runs through the queues repository the adapter set provides.
var Module = fx.Module("appointments",
	fx.Provide(
		core.NewService,
		func(r queues.Repository) core.Queues { return r },
	),
	fx.Invoke(func(srv *web.Server, s *core.Service) { appointmenthttp.Register(srv.API, s, srv.Cursors) }),
)
