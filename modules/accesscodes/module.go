// Package accesscodes wires the access-codes module.
package accesscodes

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/accesscodehttp"
	"github.com/qms-dev/qms/bootstrap/web"
	core "github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/queues"
)

// Module provides the access-codes service and mounts its routes.
var Module = fx.Module("accesscodes",
	fx.Provide(
		core.NewService,
		func(s *entities.Service) core.Entities { return s },
		func(s *queues.Service) core.Queues { return s },
	),
	fx.Invoke(func(srv *web.Server, s *core.Service) { accesscodehttp.Register(srv.API, s, srv.Cursors) }),
)
