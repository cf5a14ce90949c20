package bootstrap

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/qms-dev/qms/ports"
)

// giveUps surfaces the jobs that give up: a job whose last attempt fails
// is discarded by its runner (memory or River), and what it was doing for
// a customer (a join, a tolerance expiry, a forward, a webhook delivery)
// will not happen by itself. Each one is counted in
// qms_jobs_given_up_total{kind} and logged at error with its kind, id,
// attempts, arguments (ids only) and last error, in both storage modes:
// never silently discarded (issue 23; docs/architecture.md, "Jobs that
// give up", says what each kind leaves behind).
type giveUps struct {
	counter *prometheus.CounterVec
	log     *slog.Logger
}

func newGiveUps(log *slog.Logger) *giveUps {
	return &giveUps{
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qms_jobs_given_up_total",
			Help: "Jobs whose last attempt failed and that their runner discarded, by kind: what each was doing will not happen by itself (docs/architecture.md, Jobs that give up).",
		}, []string{"kind"}),
		log: log,
	}
}

// collector puts the counter on /metrics.
func (g *giveUps) collector() prometheus.Collector { return g.counter }

// wrap makes kind's handler report its last failed attempt.
func (g *giveUps) wrap(kind ports.JobKind) ports.JobKind {
	g.counter.WithLabelValues(kind.Name) // present at 0 from the start
	handle := kind.Handler
	kind.Handler = func(ctx context.Context, jc ports.JobContext) error {
		err := handle(ctx, jc)
		if err != nil && jc.MaxAttempts > 0 && jc.Attempt >= jc.MaxAttempts {
			g.counter.WithLabelValues(kind.Name).Inc()
			g.log.LogAttrs(ctx, slog.LevelError, "job gave up: its last attempt failed and it is discarded",
				slog.String("kind", kind.Name), slog.String("job_id", jc.ID), slog.Int("attempts", jc.Attempt),
				slog.String("args", string(jc.Args)), slog.String("error", err.Error()))
		}
		return err
	}
	return kind
}

// giveUpMetrics provides the give-ups and their counter to /metrics.
var giveUpMetrics = fx.Provide(
	newGiveUps,
	fx.Annotate((*giveUps).collector, fx.ResultTags(ports.InGroup(ports.GroupMetrics))),
)
