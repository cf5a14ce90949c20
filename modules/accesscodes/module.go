// Package accesscodes wires the access-codes module: the codes, their
// routes, and the intake guard that asks turns for a code.
package accesscodes

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/accesscodehttp"
	"github.com/qms-dev/qms/adapters/http/server"
	core "github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/ports"
)

// Module provides the access-codes service, contributes its intake guard
// to the turns module and mounts its routes.
var Module = fx.Module("accesscodes",
	fx.Provide(
		core.NewService,
		core.NewGuard,
		func(s *entities.Service) core.Entities { return s },
		func(s *queues.Service) core.Queues { return s },
		fx.Annotate(func(g *core.Guard) turns.IntakeGuard { return g },
			fx.ResultTags(ports.InGroup(ports.GroupIntakeGuards))),
	),
	fx.Invoke(func(srv *server.Server, s *core.Service, g *core.Guard) {
		accesscodehttp.Register(srv.API, s, g, srv.Cursors)
	}),
)
