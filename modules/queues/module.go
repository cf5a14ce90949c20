// Package queues wires the queues module: queues, stations and runs.
package queues

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/queuehttp"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/core/entities"
	core "github.com/qms-dev/qms/core/queues"
)

// Module provides the queues service and mounts its routes.
var Module = fx.Module("queues",
	fx.Provide(
		core.NewService,
		func(s *entities.Service) core.Entities { return s },
	),
	fx.Invoke(func(srv *server.Server, s *core.Service) { queuehttp.Register(srv.API, s, srv.Cursors) }),
)
