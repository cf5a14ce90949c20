// Package retention wires the prune job: a periodic job kind (River's
// periodic jobs in postgres mode, the in-process runner's in memory mode)
// that deletes, through the storage's ports.Pruner, every kind of record
// that would otherwise grow without bound, once it is older than its
// configured period.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/ports"
)

// KindName is the prune job's kind.
const KindName = "retention.prune"

// jobTimeout bounds one run. A backlog larger than a run can delete is
// finished by the next runs: each batch commits on its own.
const jobTimeout = 10 * time.Minute

// Module contributes the prune job kind. The storage provides ports.Pruner.
var Module = fx.Module("retention",
	fx.Provide(fx.Annotate(Kind, fx.ResultTags(ports.InGroup(ports.GroupJobs)))),
)

// Policy is what the prune job deletes and how: each Rule's records older
// than its Keep, BatchSize rows per statement.
type Policy struct {
	BatchSize int
	Rules     []Rule
}

// Rule is one kind of record and how long it is kept.
type Rule struct {
	Name  string
	Keep  time.Duration
	Prune func(ctx context.Context, before time.Time, limit int) (int, error)
}

// PolicyOf reads the retention settings.
func PolicyOf(cfg *config.Config, p ports.Pruner) Policy {
	r := cfg.Retention
	return Policy{BatchSize: r.BatchSize, Rules: []Rule{
		{"events", r.Events, p.PruneEvents},
		{"webhook_deliveries", r.Deliveries, p.PruneDeliveries},
		{"line_changes", r.LineChanges, p.PruneLineChanges},
		{"forwards", r.Forwards, p.PruneForwards},
		{"rate_limits", r.RateLimits, p.PruneRateLimits},
		{"ticket_links", ticketLinksKeep(cfg), p.PruneTicketLinks},
	}}
}

// ticketLinksKeep is how long a ticket link is kept after its turn
// finished: retention.ticket_links, but never before it expires
// (tickets.expire_after: a live link must keep working) nor while the turn
// can still be reopened (a reopened turn opens its links again).
func ticketLinksKeep(cfg *config.Config) time.Duration {
	return max(cfg.Retention.TicketLinks, cfg.Tickets.ExpireAfter, turns.ReopenWindow)
}

// Kind is the periodic prune job, every retention.interval.
func Kind(cfg *config.Config, p ports.Pruner, clock platform.Clock, log *slog.Logger) ports.JobKind {
	policy := PolicyOf(cfg, p)
	log = log.With("module", "retention")
	return ports.JobKind{
		Name:        KindName,
		Every:       cfg.Retention.Interval,
		Timeout:     jobTimeout,
		MaxAttempts: 3,
		Handler: func(ctx context.Context, _ ports.JobContext) error {
			return policy.Run(ctx, clock.Now(), log)
		},
	}
}

// Run prunes each rule's records older than now minus its Keep, a batch at
// a time until a batch comes back short. A rule that fails does not stop
// the others; the first error is returned, so the job retries.
func (p Policy) Run(ctx context.Context, now time.Time, log *slog.Logger) error {
	var first error
	for _, r := range p.Rules {
		before := now.Add(-r.Keep)
		total := 0
		for {
			n, err := r.Prune(ctx, before, p.BatchSize)
			total += n
			if err != nil {
				if first == nil {
					first = fmt.Errorf("retention: prune %s: %w", r.Name, err)
				}
				log.Warn("retention: prune failed", slog.String("records", r.Name), slog.Int("deleted", total), slog.String("error", err.Error()))
				break
			}
			if n < p.BatchSize {
				break
			}
		}
		if total > 0 {
			log.Info("retention: pruned", slog.String("records", r.Name), slog.Int("deleted", total), slog.Time("before", before))
		}
	}
	return first
}
