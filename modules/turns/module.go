// Package turns wires the turns and dispatch modules: the turns service,
// its routes, and the tolerance job that expires unanswered calls.
package turns

import (
	"context"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/adapters/http/turnhttp"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	core "github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/ports"
)

// Module provides the turns service (with every contributed intake guard),
// mounts its routes and contributes the tolerance job kind. It reads
// queues, runs and stations through the queues repository the adapter set
// provides.
var Module = fx.Module("turns",
	fx.Provide(
		newService,
		func(r queues.Repository) core.Queues { return r },
		fx.Annotate(toleranceJob, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
		fx.Annotate(lineChangesRetention, fx.ResultTags(ports.InGroup(ports.GroupRetention))),
		fx.Annotate(slaJob, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
	),
	fx.Invoke(func(srv *server.Server, s *core.Service) { turnhttp.Register(srv.API, s, srv.Cursors) }),
	fx.Invoke(func(srv *server.Server, s *core.Service) { turnhttp.RegisterPoints(srv.API, s) }),
	fx.Invoke(func(bus *events.Bus, s *core.Service) { bus.Subscribe(s) }),
)

// lineChangesRetention prunes the line changes of runs closed more than
// retention.line_changes ago (an open run's are pruned as its line moves).
func lineChangesRetention(cfg *config.Config, repo core.Repository) ports.RetentionTask {
	return ports.RetentionTask{Name: "line_changes", Keep: cfg.Retention.LineChanges, Prune: repo.PruneLineChanges}
}

// serviceParams are the turns service's dependencies; Guards are the
// intake guards other modules contribute (ports.GroupIntakeGuards),
// Followers the records that follow a turn (ports.GroupTurnFollowers),
// Watchers those that hear every change (ports.GroupTurnWatchers).
type serviceParams struct {
	fx.In
	Repo      core.Repository
	Queues    core.Queues
	UoW       platform.UnitOfWork
	Events    platform.EventSink
	Jobs      platform.JobScheduler
	Clock     platform.Clock
	Guards    []core.IntakeGuard `group:"turns.intakeGuards"`
	Followers []core.Follower    `group:"turns.followers"`
	Watchers  []core.Watcher     `group:"turns.watchers"`
}

func newService(p serviceParams) *core.Service {
	return core.NewService(p.Repo, p.Queues, p.UoW, p.Events, p.Jobs, p.Clock,
		core.Hooks{Guards: p.Guards, Followers: p.Followers, Watchers: p.Watchers})
}

// toleranceMaxAttempts: the job is idempotent and quick; a failure is the
// database being away, worth retrying for a while, not forever.
const toleranceMaxAttempts = 10

// toleranceJob is the job kind that applies dispatchFlow.onToleranceExpired
// to a call whose grace period is over.
func toleranceJob(s *core.Service) ports.JobKind {
	return ports.JobKind{
		Name:        core.ToleranceJobKind,
		MaxAttempts: toleranceMaxAttempts,
		Handler: ports.Typed("turns", func(ctx context.Context, args core.ToleranceArgs, _ ports.JobContext) error {
			return s.ExpireTolerance(ctx, args)
		}),
	}
}

// slaJob is the job kind that raises turn.sla_breached for a turn still
// waiting past its queue's sla.maxWaitMinutes.
func slaJob(s *core.Service) ports.JobKind {
	return ports.JobKind{
		Name:        core.SLAJobKind,
		MaxAttempts: toleranceMaxAttempts,
		Handler: ports.Typed("turns", func(ctx context.Context, args core.SLAArgs, _ ports.JobContext) error {
			return s.CheckSLA(ctx, args)
		}),
	}
}
