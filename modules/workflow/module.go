// Package workflow wires the workflow module: connected queues.
package workflow

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/workflowhttp"
	"github.com/qms-dev/qms/bootstrap/web"
	"github.com/qms-dev/qms/core/queues"
	core "github.com/qms-dev/qms/core/workflow"
)

// Module provides the workflow service and mounts its routes.
var Module = fx.Module("workflow",
	fx.Provide(
		core.NewService,
		func(s *queues.Service) core.Queues { return s },
	),
	fx.Invoke(func(srv *web.Server, s *core.Service) { workflowhttp.Register(srv.API, s, srv.Cursors) }),
)
