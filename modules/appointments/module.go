// Package appointments wires the appointments module: slots, appointments
// and their lifecycle, and the place of HYBRID queues' checked-in
// appointments in the turns line.
package appointments

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/appointmenthttp"
	"github.com/qms-dev/qms/adapters/http/server"
	core "github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/ports"
)

// Module provides the appointments service and mounts its routes. It reads
// queues and runs through the queues repository the adapter set provides,
// puts checked-in HYBRID appointments in the line through the turns
// service, and follows their turns.
var Module = fx.Module("appointments",
	fx.Provide(
		newService,
		func(r queues.Repository) core.Queues { return r },
		fx.Annotate(joinLineJob, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
		fx.Annotate(joinDueJob, fx.ResultTags(ports.InGroup(ports.GroupJobs))),
		// The turns of checked-in appointments carry their appointments
		// along: the turns service is built with the follower, and the
		// appointments service (which puts turns in the line) with the
		// turns service.
		fx.Annotate(func(r core.Repository, e platform.EventSink, c platform.Clock) turns.Follower {
			return core.NewTurnFollower(r, e, c)
		}, fx.ResultTags(ports.InGroup(ports.GroupTurnFollowers))),
	),
	// A reopened run takes in the appointments that were due to join it
	// while it was closed.
	fx.Invoke(func(s *core.Service, bus *events.Bus) { bus.Subscribe(s) }),
	fx.Invoke(func(srv *server.Server, s *core.Service) { appointmenthttp.Register(srv.API, s, srv.Cursors) }),
)

// serviceParams are the appointments service's dependencies: the turns
// service is its line, Watchers hear every booking and lifecycle step
// (ports.GroupAppointmentWatchers: the notifications module's reminder).
type serviceParams struct {
	fx.In
	Repo     core.Repository
	Queues   core.Queues
	UoW      platform.UnitOfWork
	Events   platform.EventSink
	Clock    platform.Clock
	Line     *turns.Service
	Jobs     platform.JobScheduler
	Watchers []core.Watcher `group:"appointments.watchers"`
}

func newService(p serviceParams) *core.Service {
	return core.NewService(p.Repo, p.Queues, p.UoW, p.Events, p.Clock, p.Line, p.Jobs, p.Watchers...)
}

// joinLineJob is the job kind that puts an appointment checked in early in
// the line when its slot starts.
func joinLineJob(s *core.Service) ports.JobKind {
	return ports.JobKind{
		Name:        core.JoinLineJobKind,
		MaxAttempts: 10,
		Handler: ports.Typed("appointments", func(ctx context.Context, args core.JoinLineArgs, _ ports.JobContext) error {
			return s.JoinLine(ctx, args)
		}),
	}
}

// joinDueEvery is how often the sweep looks for appointments left waiting
// to join an open run: a join job that gave up is made good within it.
const joinDueEvery = time.Minute

// joinDueJob is the periodic sweep that joins appointments left waiting on
// an open run (their join job gave up or was lost); a run that opens takes
// its own in at once. One process runs it per period (River's leader).
func joinDueJob(s *core.Service, log *slog.Logger) ports.JobKind {
	log = log.With("module", "appointments")
	return ports.JobKind{
		Name:        core.JoinDueJobKind,
		Every:       joinDueEvery,
		MaxAttempts: 3,
		Handler: func(ctx context.Context, _ ports.JobContext) error {
			n, err := s.JoinDue(ctx)
			if n > 0 {
				// Each was due and not in the line: worth an operator's look.
				log.Warn("appointments: joined appointments left waiting on an open run", "joined", n)
			}
			return err
		},
	}
}
