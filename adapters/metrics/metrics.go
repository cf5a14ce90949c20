// Package metrics exposes a qms process's Prometheus metrics: HTTP requests
// by route template, method and status with their latencies, rate-limit
// rejections, webhook deliveries by outcome and their lag, River jobs by
// kind and state, the database pool, and live stream subscribers.
//
// Every process has its own [Metrics] (its own registry), so several
// processes in one test binary never mix their numbers. Labels never carry
// account ids, keys, tokens or resource ids: routes are templates
// (/api/v1/turns/:turnId), and everything else is a small closed set.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every metric qms defines.
const Namespace = "qms"

// Outcomes of a webhook delivery attempt, the values of the outcome label of
// qms_webhook_deliveries_total and qms_webhook_delivery_lag_seconds.
const (
	// DeliverySucceeded: the receiver answered 2xx in time.
	DeliverySucceeded = "succeeded"
	// DeliveryFailed: the attempt failed and the delivery will be retried.
	DeliveryFailed = "failed"
	// DeliveryDiscarded: the attempt failed and no attempt is left.
	DeliveryDiscarded = "discarded"
)

// Metrics is the registry of one process and the instruments qms records
// into directly. Collectors that read their numbers at scrape time (the
// database pool, River's jobs, stream subscribers) are added with Register.
type Metrics struct {
	// Registry holds every metric of the process, Go's runtime and process
	// metrics included. Serve it with Handler.
	Registry *prometheus.Registry

	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	rateLimited  prometheus.Counter
	deliveries   *prometheus.CounterVec
	deliveryLag  *prometheus.HistogramVec
	unknownLabel *prometheus.CounterVec

	// series caches the HTTP series by seriesKey (http.go). The vectors'
	// children are never deleted, so a cached one stays the registered
	// one.
	series sync.Map
}

// New builds the registry with the process and Go collectors and qms's own
// instruments.
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests answered, by route template, method and status.",
	}, []string{"route", "method", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "http", Name: "request_duration_seconds",
		Help: "Time from receiving a request to handing its response to the server, by route template, method and status. " +
			"For a stream it is the time to the response headers.",
		Buckets: []float64{.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route", "method", "status"})
	m.rateLimited = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "http", Name: "rate_limited_total",
		Help: "Requests refused with 429 RATE_LIMITED by the per-key rate limit.",
	})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "webhook", Name: "deliveries_total",
		Help: "Webhook delivery attempts by outcome: succeeded, failed (will retry) or discarded (no attempt left).",
	}, []string{"outcome"})
	m.deliveryLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "webhook", Name: "delivery_lag_seconds",
		Help:    "Time from the event to the end of a delivery attempt, by outcome.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400},
	}, []string{"outcome"})
	m.unknownLabel = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "metrics_unknown_label_total",
		Help: "Observations whose label value was outside its closed set and was recorded as \"other\", by metric.",
	}, []string{"metric"})
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.duration, m.rateLimited, m.deliveries, m.deliveryLag, m.unknownLabel,
	)
	return m
}

// Register adds collectors (for example a database pool's). It panics on a
// collector registered twice, a wiring bug.
func (m *Metrics) Register(cs ...prometheus.Collector) { m.Registry.MustRegister(cs...) }

// DeliveryFinished records the end of one webhook delivery attempt: its
// outcome (DeliverySucceeded, DeliveryFailed or DeliveryDiscarded; anything
// else is recorded as "other") and its lag, the time from the event to the
// end of the attempt. It implements ports.DeliveryObserver.
func (m *Metrics) DeliveryFinished(outcome string, lag time.Duration) {
	switch outcome {
	case DeliverySucceeded, DeliveryFailed, DeliveryDiscarded:
	default:
		m.unknownLabel.WithLabelValues("qms_webhook_deliveries_total").Inc()
		outcome = "other"
	}
	m.deliveries.WithLabelValues(outcome).Inc()
	m.deliveryLag.WithLabelValues(outcome).Observe(max(lag, 0).Seconds())
}
