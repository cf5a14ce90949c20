// Package counter wires the staff console: counter links under /api/v1
// and the consoles under /counter. The storage provides the link
// repository.
package counter

import (
	"context"
	"log/slog"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/counterhttp"
	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/configs/config"
	core "github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/ports"
)

// links joins the workflow module's two halves the console needs: the
// links of the account, and forwarding a turn through one.
type links struct {
	*workflow.Service
	*workflow.Forwarder
}

// help is the ticket module's help requests as the console reads them.
type help struct{ svc *ticket.Service }

func (h help) OpenHelp(ctx context.Context, accountID, runID string) ([]core.HelpRequest, error) {
	var out []core.HelpRequest
	page := platform.PageRequest{Limit: platform.MaxPageLimit}
	for {
		p, err := h.svc.RunHelp(ctx, accountID, runID, ticket.HelpListFilter{Status: ticket.HelpOpen}, page)
		if err != nil {
			return nil, err
		}
		for _, r := range p.Items {
			out = append(out, consoleHelp(r))
		}
		if p.Next == "" {
			return out, nil
		}
		page.After = p.Next
	}
}

func (h help) GetHelp(ctx context.Context, accountID, id string) (core.HelpRequest, error) {
	r, err := h.svc.GetHelp(ctx, accountID, id)
	return consoleHelp(r), err
}

func (h help) AnswerHelp(ctx context.Context, accountID, id string, reply *string) (core.HelpRequest, error) {
	r, err := h.svc.AnswerHelp(ctx, accountID, id, ticket.AnswerInput{Reply: reply})
	return consoleHelp(r), err
}

func consoleHelp(r ticket.HelpRequest) core.HelpRequest {
	return core.HelpRequest{ID: r.ID, TurnID: r.TurnID, QueueID: r.QueueID, RunID: r.RunID, DisplayCode: r.DisplayCode, Status: r.Status,
		Reply: r.Reply, RequestedAt: r.RequestedAt, AnsweredAt: r.AnsweredAt}
}

// Module provides the counter service and mounts its routes.
var Module = fx.Module("counter",
	fx.Provide(
		core.NewService,
		func(s *queues.Service) core.Queues { return s },
		func(s *turns.Service) core.Turns { return s },
		func(s *workflow.Service, f *workflow.Forwarder) core.Links { return links{s, f} },
		func(s *ticket.Service) core.Help { return help{s} },
	),
	fx.Invoke(func(srv *server.Server, svc *core.Service, hub *stream.Hub, lim ports.RateLimiter, cfg *config.Config,
		clock platform.Clock, log *slog.Logger) {
		counterhttp.RegisterAPI(srv.API, svc, srv.Cursors)
		// The consoles take no key: they are rate limited by client
		// address, in a budget of their own, so the waiting room's screens
		// and phones behind the same address cannot cut the counters off.
		limit := httpx.RateLimitBudget(lim, cfg.RateLimit.PerMinute, clock.Now, "counter")
		counterhttp.RegisterPage(srv.App, svc, hub, limit, log.With("module", "counter"), counterhttp.Options{})
	}),
)
