// Package analytics wires the analytics module.
package analytics

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/analyticshttp"
	"github.com/qms-dev/qms/adapters/http/server"
	core "github.com/qms-dev/qms/core/analytics"
	"github.com/qms-dev/qms/core/queues"
)

// Module provides the analytics service and mounts its routes.
var Module = fx.Module("analytics",
	fx.Provide(
		core.NewService,
		func(r queues.Repository) core.Queues { return r },
	),
	fx.Invoke(func(srv *server.Server, s *core.Service) { analyticshttp.Register(srv.API, s) }),
)
