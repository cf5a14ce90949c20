package bootstrap

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/metrics"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/analytics"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/ports"
)

// storage returns the adapter set named by cfg.Storage. Both sets provide
// the same ports, so nothing above this function knows which one runs.
func storage(cfg *config.Config) fx.Option {
	if cfg.Storage == config.StoragePostgres {
		return postgresAdapters
	}
	return memoryAdapters
}

var memoryAdapters = fx.Module("memory",
	fx.Provide(
		memory.NewStore,
		fx.Annotate(func(s *memory.Store) *memory.Store { return s }, fx.As(new(platform.UnitOfWork)), fx.As(new(ports.Pinger))),
		fx.Annotate(memory.NewAccounts, fx.As(new(accounts.Repository))),
		fx.Annotate(memory.NewEntities, fx.As(new(entities.Repository))),
		fx.Annotate(memory.NewQueues, fx.As(new(queues.Repository))),
		fx.Annotate(memory.NewTurns, fx.As(new(turns.Repository))),
		fx.Annotate(memory.NewAppointments, fx.As(new(appointments.Repository))),
		fx.Annotate(memory.NewAccessCodes, fx.As(new(accesscodes.Repository))),
		fx.Annotate(memory.NewAccessCodeTurns, fx.As(new(accesscodes.TurnCodes))),
		fx.Annotate(memory.NewWorkflow, fx.As(new(workflow.Repository)), fx.As(new(workflow.ForwardRepository))),
		fx.Annotate(memory.NewAnalytics, fx.As(new(analytics.Repository))),
		fx.Annotate(memory.NewWebhooks, fx.As(new(webhooks.Repository))),
		fx.Annotate(memory.NewEvents, fx.As(new(events.Store)), fx.As(fx.Self())),
		fx.Annotate(memory.NewStreamLog, fx.As(new(stream.Log)), fx.As(new(stream.Notifier)), fx.As(new(display.Calls)), fx.As(fx.Self())),
		fx.Annotate(memory.NewDisplayTokens, fx.As(new(display.Repository))),
		fx.Annotate(memory.NewTicketLinks, fx.As(new(ticket.Repository))),
		fx.Annotate(memory.NewRateLimiter, fx.As(new(ports.RateLimiter))),
		fx.Annotate(newMemoryRunner, fx.As(new(ports.JobRunner)), fx.As(new(platform.JobScheduler))),
	),
	fx.Invoke(runJobs),
	// The stream log copies each event, in its transaction, in commit order.
	fx.Invoke(func(b *events.Bus, l *memory.StreamLog) { b.Subscribe(l) }),
)

var postgresAdapters = fx.Module("postgres",
	fx.Provide(
		openPostgres,
		fx.Annotate(func(db *postgres.DB) *postgres.DB { return db }, fx.As(new(platform.UnitOfWork)), fx.As(new(ports.Pinger))),
		fx.Annotate(postgres.NewAccounts, fx.As(new(accounts.Repository))),
		fx.Annotate(postgres.NewEntities, fx.As(new(entities.Repository))),
		fx.Annotate(postgres.NewQueues, fx.As(new(queues.Repository))),
		fx.Annotate(postgres.NewTurns, fx.As(new(turns.Repository))),
		fx.Annotate(postgres.NewAppointments, fx.As(new(appointments.Repository))),
		fx.Annotate(postgres.NewAccessCodes, fx.As(new(accesscodes.Repository))),
		fx.Annotate(postgres.NewAccessCodeTurns, fx.As(new(accesscodes.TurnCodes))),
		fx.Annotate(postgres.NewWorkflow, fx.As(new(workflow.Repository)), fx.As(new(workflow.ForwardRepository))),
		fx.Annotate(postgres.NewAnalytics, fx.As(new(analytics.Repository))),
		// Signing secrets are sealed under webhooks.secret_key (secrets.go).
		fx.Annotate(newWebhooksRepo, fx.As(new(webhooks.Repository)), fx.As(fx.Self())),
		fx.Annotate(postgres.NewEvents, fx.As(new(events.Store)), fx.As(fx.Self())),
		fx.Annotate(postgres.NewStreamLog, fx.As(new(stream.Log)), fx.As(new(display.Calls))),
		fx.Annotate(postgres.NewDisplayTokens, fx.As(new(display.Repository))),
		fx.Annotate(postgres.NewTicketLinks, fx.As(new(ticket.Repository))),
		fx.Annotate(postgres.NewStreamNotifier, fx.As(new(stream.Notifier))),
		fx.Annotate(postgres.NewRateLimiter, fx.As(new(ports.RateLimiter))),
		fx.Annotate(newRiverRunner, fx.As(new(ports.JobRunner)), fx.As(new(platform.JobScheduler))),
		postgres.NewAuthListener,
		fx.Annotate(postgresCollectors, fx.ResultTags(`group:"`+ports.GroupMetrics+`,flatten"`)),
	),
	fx.Invoke(runJobs),
	fx.Invoke(listenAuth),
	fx.Invoke(sealPlainSecrets),
)

// openPostgres connects, applies migrations unless told not to, and closes
// the pool when the application stops (after the job runner has stopped).
func openPostgres(lc fx.Lifecycle, cfg *config.Config, log *slog.Logger) (*postgres.DB, error) {
	db, err := postgres.Open(context.Background(), cfg.Database.URL)
	if err != nil {
		return nil, fmt.Errorf("QMS_DATABASE_URL: %w", err)
	}
	db.Logger = log.With("component", "postgres")
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if !cfg.Database.Migrate {
				return nil
			}
			if err := db.Migrate(ctx); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			log.Info("migrations applied")
			return nil
		},
		OnStop: func(context.Context) error { db.Close(); return nil },
	})
	return db, nil
}

func newMemoryRunner(s *memory.Store, clock platform.Clock, log *slog.Logger) *memory.JobRunner {
	return memory.NewJobRunner(s, clock, memory.JobRunnerOptions{Logger: log.With("component", "jobs")})
}

func newRiverRunner(db *postgres.DB, log *slog.Logger) *riverjobs.Runner {
	return riverjobs.New(db, riverjobs.Options{Logger: log.With("component", "river")})
}

// postgresCollectors are the PostgreSQL set's metrics: the pool and
// River's jobs.
func postgresCollectors(db *postgres.DB, log *slog.Logger) []prometheus.Collector {
	return []prometheus.Collector{metrics.NewPoolCollector(db.Pool), metrics.NewJobsCollector(db.Pool, log)}
}

// jobKinds collects the job kinds modules contribute.
type jobKinds struct {
	fx.In
	Kinds []ports.JobKind `group:"jobs"`
}

// runJobs registers every module's job kinds and runs the workers with the
// application. Registered after the storage, so it stops before the pool
// closes.
func runJobs(lc fx.Lifecycle, runner ports.JobRunner, kinds jobKinds) {
	for _, k := range kinds.Kinds {
		runner.Register(k)
	}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error { return runner.Start(context.Background()) },
		OnStop:  runner.Stop,
	})
}
