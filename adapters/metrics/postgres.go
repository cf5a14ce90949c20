package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Both collectors are Prometheus collectors, checked by the compiler.
var (
	_ prometheus.Collector = (*PoolCollector)(nil)
	_ prometheus.Collector = (*JobsCollector)(nil)
)

// scrapeTimeout bounds the queries a collector runs during a scrape.
const scrapeTimeout = 2 * time.Second

// PoolCollector reports a pgx pool's use at scrape time (pgxpool.Stat):
// connections in use, idle and total against the maximum, and how often
// and how long callers waited to acquire one.
type PoolCollector struct {
	pool *pgxpool.Pool

	acquired, idle, total, max, constructing *prometheus.Desc
	acquires, emptyAcquires, canceled        *prometheus.Desc
	acquireSeconds                           *prometheus.Desc
}

// NewPoolCollector reports on pool.
func NewPoolCollector(pool *pgxpool.Pool) *PoolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "db_pool", name), help, nil, nil)
	}
	return &PoolCollector{
		pool:           pool,
		acquired:       d("acquired_connections", "Connections of the pool in use now."),
		idle:           d("idle_connections", "Idle connections of the pool now."),
		total:          d("total_connections", "Connections of the pool now, in use, idle or being opened."),
		max:            d("max_connections", "The most connections the pool opens."),
		constructing:   d("constructing_connections", "Connections being opened now."),
		acquires:       d("acquires_total", "Connections acquired from the pool."),
		emptyAcquires:  d("empty_acquires_total", "Acquires that had to wait because no connection was idle."),
		canceled:       d("canceled_acquires_total", "Acquires abandoned by their caller's context."),
		acquireSeconds: d("acquire_wait_seconds_total", "Time spent waiting for connections."),
	}
}

// Describe implements prometheus.Collector.
func (p *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.acquired, p.idle, p.total, p.max, p.constructing,
		p.acquires, p.emptyAcquires, p.canceled, p.acquireSeconds} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.pool.Stat()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	c := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(p.acquired, float64(s.AcquiredConns()))
	g(p.idle, float64(s.IdleConns()))
	g(p.total, float64(s.TotalConns()))
	g(p.max, float64(s.MaxConns()))
	g(p.constructing, float64(s.ConstructingConns()))
	c(p.acquires, float64(s.AcquireCount()))
	c(p.emptyAcquires, float64(s.EmptyAcquireCount()))
	c(p.canceled, float64(s.CanceledAcquireCount()))
	c(p.acquireSeconds, s.AcquireDuration().Seconds())
}

// riverStates are the states of a River job (rivertype.JobState), reported
// for every kind present so that a state that empties shows 0 rather than
// vanishing.
var riverStates = []string{"available", "cancelled", "completed", "discarded", "pending", "retryable", "running", "scheduled"}

// JobsCollector reports River's jobs by kind and state at scrape time, with
// one grouped query on river_job. Completed, cancelled and discarded jobs
// stay until River's cleaner deletes them (after a day by default), so
// their counts are a recent history, the others the current backlog. The
// query is shared by every process on the database: each reports the same
// numbers, so aggregate with max, not sum.
type JobsCollector struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	jobs, up *prometheus.Desc
}

// NewJobsCollector reports on the river_job table reachable through pool.
func NewJobsCollector(pool *pgxpool.Pool, log *slog.Logger) *JobsCollector {
	if log == nil {
		log = slog.Default()
	}
	return &JobsCollector{
		pool: pool, log: log,
		jobs: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "jobs", "count"),
			"River jobs in the database by kind and state.", []string{"kind", "state"}, nil),
		up: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "jobs", "scrape_ok"),
			"1 when the last count of River jobs succeeded, 0 when it failed (the counts are then missing).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (j *JobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- j.jobs; ch <- j.up }

// Collect implements prometheus.Collector.
func (j *JobsCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := j.count()
	if err != nil {
		j.log.Warn("metrics: counting River jobs failed", "err", err)
		ch <- prometheus.MustNewConstMetric(j.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(j.up, prometheus.GaugeValue, 1)
	for kind, byState := range counts {
		for _, state := range riverStates {
			ch <- prometheus.MustNewConstMetric(j.jobs, prometheus.GaugeValue, float64(byState[state]), kind, state)
		}
	}
}

func (j *JobsCollector) count() (map[string]map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT kind, state::text, count(*) FROM river_job GROUP BY kind, state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]map[string]int64{}
	for rows.Next() {
		var kind, state string
		var n int64
		if err := rows.Scan(&kind, &state, &n); err != nil {
			return nil, err
		}
		if out[kind] == nil {
			out[kind] = map[string]int64{}
		}
		out[kind][state] = n
	}
	return out, rows.Err()
}
