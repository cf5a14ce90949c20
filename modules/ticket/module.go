// Package ticket wires the customer's live ticket page: ticket links under
// /api/v1 and the pages under /ticket, and the strings of the
// waiting-room pages under /i18n. The storage provides the link
// repository.
package ticket

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/i18nweb"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/adapters/http/tickethttp"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	core "github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
)

// Module provides the ticket service and mounts its routes.
var Module = fx.Module("ticket",
	fx.Provide(
		func(repo core.Repository, ts *turns.Service, qs *queues.Service, es *entities.Service, uow platform.UnitOfWork,
			events platform.EventSink, clock platform.Clock, cfg *config.Config) *core.Service {
			return core.NewService(repo, ts, qs, es, uow, events, clock, core.Options{ExpireAfter: cfg.Tickets.ExpireAfter})
		},
	),
	fx.Invoke(func(srv *server.Server, svc *core.Service, hub *stream.Hub, log *slog.Logger) {
		tickethttp.RegisterAPI(srv.API, svc, srv.Cursors)
		// A ticket page is a waiting-room screen: keyless, limited per
		// link and per client address for the whole waiting room (its
		// phones share the venue's address); static files not at all.
		i18nweb.Register(srv.App)
		tickethttp.RegisterPage(srv.App, svc, hub, srv.TokenLimit("ticket", "token"), log.With("module", "ticket"), tickethttp.Options{})
	}),
)
