// Package entities wires the entities (branches) module.
package entities

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/entityhttp"
	"github.com/qms-dev/qms/adapters/http/server"
	core "github.com/qms-dev/qms/core/entities"
)

// Module provides the entities service and mounts its routes.
var Module = fx.Module("entities",
	fx.Provide(core.NewService),
	fx.Invoke(func(srv *server.Server, s *core.Service) { entityhttp.Register(srv.API, s, srv.Cursors) }),
)
