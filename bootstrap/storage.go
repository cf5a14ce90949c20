package bootstrap

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/adapters/fallbacklimit"
	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/metrics"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	core "github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/ports"
)

// storage returns the adapter set named by cfg.Storage. Both sets provide
// the same ports, so nothing above this function knows which one runs.
func storage(cfg *config.Config) fx.Option {
	if cfg.Storage == config.StoragePostgres {
		return fx.Options(postgresAdapters, limitWhileDown)
	}
	return memoryAdapters
}

var memoryAdapters = fx.Module("memory",
	fx.Provide(
		memory.NewStore,
		func(s *memory.Store, clock platform.Clock, log *slog.Logger) (adapterset.Set, error) {
			return adapterset.Memory(s, adapterset.Options{Clock: clock, Logger: log})
		},
	),
	giveUpMetrics,
	fx.Invoke(runJobs, subscribeCopies),
	fx.Invoke(notifiedInProcess),
)

var postgresAdapters = fx.Module("postgres",
	fx.Provide(
		openPostgres,
		func(db *postgres.DB, cfg *config.Config, log *slog.Logger) (adapterset.Set, error) {
			return adapterset.Postgres(db, adapterset.Options{Logger: log,
				SecretKey: cfg.Webhooks.SecretKey, OldSecretKeys: cfg.OldSecretKeys(),
				Jobs: riverjobs.Options{
					Workers:             cfg.Jobs.Workers,
					QueueWorkers:        map[string]int{core.JobQueue: cfg.Webhooks.Workers, notify.JobQueue: cfg.Notify.Workers},
					FetchCooldown:       cfg.Jobs.FetchCooldown,
					FetchPollInterval:   cfg.Jobs.FetchPollInterval,
					OrphanCheckInterval: cfg.Jobs.OrphanCheckInterval,
					OrphanAfter:         cfg.Jobs.OrphanAfter,
				}})
		},
		postgres.NewAuthListener,
		fx.Annotate(postgresCollectors, fx.ResultTags(`group:"`+ports.GroupMetrics+`,flatten"`)),
	),
	giveUpMetrics,
	fx.Invoke(runJobs, subscribeCopies),
	fx.Invoke(listenAuth),
	fx.Invoke(sealPlainSecrets),
	fx.Provide(
		fallbacklimit.NewMetrics,
		fx.Annotate(func(m *fallbacklimit.Metrics) prometheus.Collector { return m },
			fx.ResultTags(`group:"`+ports.GroupMetrics+`"`)),
	),
)

// limitWhileDown is the rate limiter of the postgres set while its
// database cannot count: this process's own count (fallbacklimit). A
// decoration of the root scope, where the HTTP server takes the limiter.
var limitWhileDown = fx.Decorate(func(shared ports.RateLimiter, faults ports.FaultClassifier, m *fallbacklimit.Metrics, log *slog.Logger) ports.RateLimiter {
	return fallbacklimit.New(shared, memory.NewRateLimiter(), faults.Unavailable, log.With("component", "ratelimit"), m)
})

// subscribeCopies subscribes to the event bus the adapters that keep their
// own copy of the log (the memory stream log copies each event, in its
// transaction, in commit order).
func subscribeCopies(b *events.Bus, copies []events.Subscriber) {
	for _, c := range copies {
		b.Subscribe(c)
	}
}

// dbTracer carries Options.DBTracer into the graph (nil in production).
type dbTracer struct{ pgx.QueryTracer }

// openPostgres connects, applies migrations unless told not to, and closes
// the pool when the application stops (after the job runner has stopped).
func openPostgres(lc fx.Lifecycle, cfg *config.Config, log *slog.Logger, tr dbTracer) (*postgres.DB, error) {
	db, err := postgres.OpenWith(context.Background(), cfg.Database.URL, postgres.Options{
		MaxConns: int32(cfg.Database.MaxConns), AcquireTimeout: cfg.Database.AcquireTimeout, Tracer: tr.QueryTracer})
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

// postgresCollectors are the PostgreSQL set's metrics: the pool and
// River's jobs.
func postgresCollectors(db *postgres.DB, log *slog.Logger) []prometheus.Collector {
	chain := func(name, help string, f func(postgres.IntakeChainStats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "qms", Subsystem: "intake_chain", Name: name, Help: help},
			func() float64 { return float64(f(db.IntakeChainStats())) })
	}
	return []prometheus.Collector{metrics.NewPoolCollector(db.Pool), metrics.NewJobsCollector(db.Pool, log),
		chain("joined_total", "Intakes that ran in an earlier intake's open transaction (group commit).",
			func(s postgres.IntakeChainStats) int64 { return s.Joined }),
		chain("failed_alone_total", "Intakes that failed alone inside a shared transaction, the others committing.",
			func(s postgres.IntakeChainStats) int64 { return s.FailedAlone }),
		chain("reruns_total", "Intakes run again alone after their shared transaction rolled back.",
			func(s postgres.IntakeChainStats) int64 { return s.Reruns }),
	}
}

// jobKinds collects the job kinds modules contribute.
type jobKinds struct {
	fx.In
	Kinds []ports.JobKind `group:"jobs"`
}

// runJobs registers every module's job kinds and runs the workers with the
// application. Registered after the storage, so it stops before the pool
// closes.
func runJobs(lc fx.Lifecycle, runner ports.JobRunner, kinds jobKinds, gu *giveUps) {
	for _, k := range kinds.Kinds {
		runner.Register(gu.wrap(k))
	}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error { return runner.Start(context.Background()) },
		OnStop:  runner.Stop,
	})
}
