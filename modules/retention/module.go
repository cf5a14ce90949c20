// Package retention wires the prune job: a periodic job kind (River's
// periodic jobs in postgres mode, the in-process runner's in memory mode)
// that runs the retention task every module contributes
// (ports.GroupRetention): each deletes its kind of record that would
// otherwise grow without bound, once it is older than its configured
// period. This module names no table: a module that stores such records
// contributes its task next to its other wiring.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

// KindName is the prune job's kind.
const KindName = "retention.prune"

// jobTimeout bounds one run. A backlog larger than a run can delete is
// finished by the next runs: each batch commits on its own.
const jobTimeout = 10 * time.Minute

// Module contributes the prune job kind over the contributed tasks.
var Module = fx.Module("retention",
	fx.Provide(fx.Annotate(Kind, fx.ResultTags(ports.InGroup(ports.GroupJobs)))),
)

// Policy is what the prune job deletes and how: each task's records older
// than its Keep, BatchSize rows per statement.
type Policy struct {
	BatchSize int
	Tasks     []ports.RetentionTask
}

// Tasks are the retention tasks the modules contribute.
type Tasks struct {
	fx.In
	Tasks []ports.RetentionTask `group:"retention.tasks"`
}

// Kind is the periodic prune job, every retention.interval.
func Kind(cfg *config.Config, tasks Tasks, clock platform.Clock, log *slog.Logger) ports.JobKind {
	policy := Policy{BatchSize: cfg.Retention.BatchSize, Tasks: tasks.Tasks}
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

// Run prunes each task's records older than now minus its Keep, a batch at
// a time until a batch comes back short. A task that fails does not stop
// the others; the first error is returned, so the job retries.
func (p Policy) Run(ctx context.Context, now time.Time, log *slog.Logger) error {
	var first error
	for _, r := range p.Tasks {
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
