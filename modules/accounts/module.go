// Package accounts wires the accounts module: its use cases, the admin API
// of the control panel's side, and API-key authentication for /api/v1.
package accounts

import (
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/adminhttp"
	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/configs/config"
	core "github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

// Module provides the accounts service as the API's authenticator and
// mounts /admin/v1.
var Module = fx.Module("accounts",
	fx.Provide(
		core.NewService,
		func(s *core.Service) httpx.Authenticator { return s },
	),
	fx.Invoke(func(srv *server.Server, s *core.Service, cfg *config.Config, clock platform.Clock) {
		adminhttp.Register(srv.App, s, srv.AdminToken, adminhttp.NewBrake(cfg.Admin.AuthFailuresPerMinute, clock.Now))
	}),
)
