// Package webhooks wires the webhooks module: the service, its routes, its
// subscription to the event bus and the job kind of delivery attempts.
package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/adapters/http/webhookhttp"
	"github.com/qms-dev/qms/adapters/webhookclient"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	core "github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/ports"
)

// Module provides the webhooks service, subscribes it to the event bus,
// mounts its routes and contributes the delivery job kind.
var Module = fx.Module("webhooks",
	fx.Provide(
		newService,
		fx.Annotate(DeliveryKind, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
		fx.Annotate(deliveriesRetention, fx.ResultTags(ports.InGroup(ports.GroupRetention))),
	),
	fx.Invoke(func(b *events.Bus, s *core.Service) { b.Subscribe(s) }),
	fx.Invoke(func(srv *server.Server, s *core.Service) { webhookhttp.Register(srv.API, s, srv.Cursors) }),
)

// deliveriesRetention prunes finished deliveries after
// retention.deliveries (pending ones are kept, whatever their age).
func deliveriesRetention(cfg *config.Config, repo core.Repository) ports.RetentionTask {
	return ports.RetentionTask{Name: "webhook_deliveries", Keep: cfg.Retention.Deliveries, Prune: repo.PruneDeliveries}
}

// serviceParams are the webhooks service's dependencies; Observer (the
// delivery metrics) is there only when the metrics module is.
type serviceParams struct {
	fx.In
	Repo     core.Repository
	UoW      platform.UnitOfWork
	Jobs     platform.JobScheduler
	Clock    platform.Clock
	Config   *config.Config
	Log      *slog.Logger
	Observer ports.DeliveryObserver `optional:"true"`
}

func newService(p serviceParams) *core.Service {
	repo, uow, jobs, clock, cfg, log, obs := p.Repo, p.UoW, p.Jobs, p.Clock, p.Config, p.Log, p.Observer
	allow := cfg.Webhooks.AllowPrivate
	if allow {
		log.Warn("webhooks may reach loopback and private addresses (webhooks.allow_private): for local development only")
	}
	sender := webhookclient.New(webhookclient.Options{AllowPrivate: allow})
	return core.NewService(repo, uow, jobs, sender, clock, core.Options{
		URLs:        core.URLPolicy{AllowPrivate: allow},
		MaxInFlight: cfg.Webhooks.MaxInFlight,
		Logger:      log.With("module", "webhooks"),
		// The metrics module, when it runs, counts every attempt.
		Observe: observe(obs),
	})
}

// Retries of one attempt's job. They are not the delivery's retry schedule
// (core.Schedule, which each attempt applies by scheduling the next one):
// they cover an attempt that could not run or be recorded — a worker killed
// mid-request and rescued, storage briefly unreachable, a shutdown — so
// they start within seconds whatever the delivery's position in its
// schedule, and go on for about an hour before the job is given up.
const (
	attemptJobMaxAttempts = 20
	// attemptJobTimeout covers the request (core.ResponseTimeout, 10 s),
	// the wait for a slot of the endpoint (200 ms) and the storage round
	// trips. It is also how long River waits before it rescues the attempt
	// of a process that died (adapters/river: at least
	// RescueStuckJobsAfter), so it is kept short.
	attemptJobTimeout = 20 * time.Second
)

// attemptJobBackoff is the runners' backoff, at most 5 minutes: a
// delivery attempt that could not be made (storage away) is retried soon.
var attemptJobBackoff = ports.Backoff(5 * time.Minute)

// DeliveryKind is the job kind of delivery attempts, run by s.Attempt.
func DeliveryKind(s *core.Service) ports.JobKind {
	return ports.JobKind{
		Name:        core.JobDeliver,
		Queue:       core.JobQueue,
		MaxAttempts: attemptJobMaxAttempts,
		Timeout:     attemptJobTimeout,
		Backoff:     attemptJobBackoff,
		Handler: ports.Typed("webhooks", func(ctx context.Context, a core.AttemptArgs, _ ports.JobContext) error {
			return s.Attempt(ctx, a)
		}, func(a core.AttemptArgs) error {
			if a.DeliveryID == "" {
				return errors.New("no deliveryId")
			}
			return nil
		}),
	}
}

// observe adapts the metrics module's observer, which is optional.
func observe(obs ports.DeliveryObserver) func(string, time.Duration) {
	if obs == nil {
		return nil
	}
	return obs.DeliveryFinished
}
