// Package fallbacklimit keeps the rate limit counting while the shared
// limiter cannot: a ports.RateLimiter that asks the shared one (PostgreSQL,
// one budget per key across every process) and, when it fails with a
// storage fault, counts the request in this process instead.
//
// The decision (docs/decisions.md, "The rate limiter while the database
// cannot count"): neither fail open, which lets an outage's retry storm
// through uncounted and drops the X-RateLimit headers the contract
// promises, nor fail closed, which turns a limiter outage into a 429 for
// everyone. While the database is away each process enforces the full
// limit on its own count: with N processes a key may pass up to N times
// its limit for as long as the fault lasts, and never more than that.
package fallbacklimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/qms-dev/qms/ports"
)

var _ ports.RateLimiter = (*Limiter)(nil)

// Limiter is the shared limiter with a local one behind it.
type Limiter struct {
	shared, local ports.RateLimiter
	// fault tells the shared limiter's storage faults (the adapter set's
	// ports.FaultClassifier) from its other errors, which pass through.
	fault   func(error) bool
	log     *slog.Logger
	metrics *Metrics
	// degraded is set while requests are counted locally: one log line
	// when it starts, one when it ends.
	degraded atomic.Bool
}

// New returns a Limiter over shared, counting in local while shared fails
// with an error fault recognises. log and m may be nil.
func New(shared, local ports.RateLimiter, fault func(error) bool, log *slog.Logger, m *Metrics) *Limiter {
	if log == nil {
		log = slog.Default()
	}
	if m == nil {
		m = NewMetrics()
	}
	return &Limiter{shared: shared, local: local, fault: fault, log: log, metrics: m}
}

// PruneRateLimits prunes both counts: the shared one's windows (the
// retention task's) and this process's own.
func (l *Limiter) PruneRateLimits(ctx context.Context, before time.Time, limit int) (int, error) {
	if _, err := l.local.PruneRateLimits(ctx, before, limit); err != nil {
		return 0, err
	}
	return l.shared.PruneRateLimits(ctx, before, limit)
}

// Allow asks the shared limiter, and the local one when the shared one
// cannot count.
func (l *Limiter) Allow(ctx context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	d, err := l.shared.Allow(ctx, key, limit, now)
	if err == nil {
		if l.degraded.Load() && l.degraded.CompareAndSwap(true, false) {
			l.metrics.degraded.Set(0)
			l.log.Info("rate limiter: counting in the database again")
		}
		return d, nil
	}
	if !l.fault(err) {
		return d, err
	}
	l.metrics.fallbacks.Inc()
	if l.degraded.CompareAndSwap(false, true) {
		l.metrics.degraded.Set(1)
		l.log.Warn("rate limiter: the database cannot count requests; this process counts them on its own until it can (each process allows the full limit meanwhile)",
			"err", err.Error())
	}
	// The shared limiter's failure may have used up the request's
	// context; counting locally needs none.
	return l.local.Allow(context.WithoutCancel(ctx), key, limit, now)
}

// Degraded reports whether requests are counted locally now.
func (l *Limiter) Degraded() bool { return l.degraded.Load() }

// Metrics are the limiter's instruments: how many requests were counted
// locally, and whether it counts locally now.
type Metrics struct {
	fallbacks prometheus.Counter
	degraded  prometheus.Gauge
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the instruments, unregistered: register them with the
// process's metrics (ports.GroupMetrics).
func NewMetrics() *Metrics {
	return &Metrics{
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "qms", Subsystem: "ratelimit", Name: "local_fallback_total",
			Help: "Requests counted by this process's own rate limiter because the database could not count them.",
		}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "qms", Subsystem: "ratelimit", Name: "degraded",
			Help: "1 while the rate limiter counts in this process only (the database cannot count), else 0.",
		}),
	}
}

func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.fallbacks.Describe(ch)
	m.degraded.Describe(ch)
}

func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.fallbacks.Collect(ch)
	m.degraded.Collect(ch)
}
