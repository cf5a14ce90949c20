// Package workflow wires the workflow module: connected queues, the
// forwarding of completed turns (a subscriber of turn.completed and a job
// kind) and its routes.
package workflow

import (
	"context"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/adapters/http/workflowhttp"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	core "github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/ports"
)

// Module provides the workflow service and the forwarder, subscribes the
// forwarder to the event bus, contributes the forward job kind and mounts
// the routes.
var Module = fx.Module("workflow",
	fx.Provide(
		core.NewService,
		core.NewForwarder,
		func(s *queues.Service) core.Queues { return s },
		func(r queues.Repository) core.QueueStore { return r },
		func(s *turns.Service) core.Turns { return s },
		fx.Annotate(forwardJob, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
		fx.Annotate(forwardsRetention, fx.ResultTags(ports.InGroup(ports.GroupRetention))),
	),
	fx.Invoke(func(bus *events.Bus, f *core.Forwarder) { bus.Subscribe(f) }),
	fx.Invoke(func(srv *server.Server, s *core.Service, f *core.Forwarder) {
		workflowhttp.Register(srv.API, s, f, srv.Cursors)
	}),
)

// forwardsRetention prunes finished forward records after
// retention.forwards (pending ones are kept).
func forwardsRetention(cfg *config.Config, repo core.ForwardRepository) ports.RetentionTask {
	return ports.RetentionTask{Name: "forwards", Keep: cfg.Retention.Forwards, Prune: repo.PruneForwards}
}

// forwardJob is the job kind that makes an automatic forward. A refusal by
// the destination is recorded by the forwarder and not retried; other
// errors are retried with backoff up to core.ForwardMaxAttempts, and the
// last one is recorded too.
func forwardJob(f *core.Forwarder) ports.JobKind {
	return ports.JobKind{
		Name:        core.ForwardJobKind,
		MaxAttempts: core.ForwardMaxAttempts,
		Handler: ports.Typed("workflow", func(ctx context.Context, args core.ForwardArgs, job ports.JobContext) error {
			return f.Run(ctx, args, job.Attempt, job.Attempt >= job.MaxAttempts)
		}),
	}
}
