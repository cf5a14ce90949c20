// Package ticket wires the customer's live ticket page: ticket links under
// /api/v1 and the pages under /ticket, and the strings of the
// waiting-room pages under /i18n. The storage provides the link
// repository.
package ticket

import (
	"log/slog"
	"time"

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
	"github.com/qms-dev/qms/ports"
)

// LinksRetention prunes the ticket links of turns that finished more than
// TicketLinksKeep ago; the links of unfinished turns are kept.
func LinksRetention(cfg *config.Config, repo core.Repository) ports.RetentionTask {
	return ports.RetentionTask{Name: "ticket_links", Keep: TicketLinksKeep(cfg), Prune: repo.PruneTicketLinks}
}

// TicketLinksKeep is how long a ticket link is kept after its turn
// finished: retention.ticket_links, but never before it expires
// (tickets.expire_after: a live link must keep working) nor while the turn
// can still be reopened (a reopened turn opens its links again).
func TicketLinksKeep(cfg *config.Config) time.Duration {
	return max(cfg.Retention.TicketLinks, cfg.Tickets.ExpireAfter, turns.ReopenWindow)
}

// Module provides the ticket service and mounts its routes.
var Module = fx.Module("ticket",
	fx.Provide(
		func(repo core.Repository, ts *turns.Service, qs *queues.Service, es *entities.Service, uow platform.UnitOfWork,
			events platform.EventSink, clock platform.Clock, cfg *config.Config) *core.Service {
			return core.NewService(repo, ts, qs, es, uow, events, clock, core.Options{ExpireAfter: cfg.Tickets.ExpireAfter})
		},
		fx.Annotate(LinksRetention, fx.ResultTags(ports.InGroup(ports.GroupRetention))),
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
