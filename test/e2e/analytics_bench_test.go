package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// benchTurns is the history the analytics benchmarks run over.
const benchTurns = 100_000

// seedHistorySQL writes benchTurns turns spread over ten queues and the
// last 90 days, as a busy account's history: 1% still waiting (taken in
// the last day), 5% no-shows, 5% cancelled, the rest served with waits up
// to 30 minutes and services up to 10. Straight SQL: going through the
// service would take minutes and measure nothing of analytics.
const seedHistorySQL = `
WITH q AS (
	SELECT queue_id, run_id, ord - 1 AS k
	  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(queue_id, run_id, ord)
), g AS (
	SELECT g, CASE WHEN g % 100 = 0 THEN 'WAITING' WHEN g % 20 = 1 THEN 'NO_SHOW' WHEN g % 20 = 2 THEN 'CANCELLED' ELSE 'COMPLETED' END AS status,
	       CASE WHEN g % 100 = 0 THEN now() - (g % 86400) * interval '1 second'
	            ELSE now() - ((g::bigint * 7919) % (90 * 86400)) * interval '1 second' END AS created
	  FROM generate_series(1, $3::int) AS g
)
INSERT INTO turns (id, account_id, queue_id, run_id, number, display_code, status, priority, priority_rank, seq,
	people_count, notify_whatsapp, form_response, call_count, reentries, held_from, reopen_to, service_seconds,
	request_hash, called_at, started_at, finished_at, created_at, updated_at)
SELECT 'turn_bench' || lpad(g.g::text, 16, '0'), $4, q.queue_id, q.run_id, g.g, g.g::text, g.status, 'NORMAL', 2, g.g,
	1, false, '{}', CASE WHEN g.status IN ('WAITING', 'CANCELLED') THEN 0 ELSE 1 END, 0, '', '',
	CASE WHEN g.status = 'COMPLETED' THEN (g.g % 600)::float8 END,
	'bench',
	CASE WHEN g.status IN ('WAITING', 'CANCELLED') THEN NULL ELSE g.created + (g.g % 1800) * interval '1 second' END,
	CASE WHEN g.status = 'COMPLETED' THEN g.created + (g.g % 1800 + 30) * interval '1 second' END,
	CASE WHEN g.status = 'WAITING' THEN NULL
	     WHEN g.status = 'COMPLETED' THEN g.created + (g.g % 1800 + 30 + g.g % 600) * interval '1 second'
	     ELSE g.created + (g.g % 1800 + 60) * interval '1 second' END,
	g.created, g.created
  FROM g JOIN q ON q.k = g.g % 10`

// BenchmarkAnalytics measures GET /analytics/dashboard and
// GET /analytics/summary through a qms process on Postgres, over an account
// with benchTurns turns in ten queues.
func BenchmarkAnalytics(b *testing.B) {
	a := apptest.Postgres(b, apptest.Unscribbled(), apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 1 << 30 }))
	var queueIDs, runIDs []string
	for range 10 {
		_, q, run := setupQueue(b, a, nil)
		queueIDs, runIDs = append(queueIDs, q), append(runIDs, run)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, a.Config.Database.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	start := time.Now()
	if _, err := pool.Exec(ctx, seedHistorySQL, queueIDs, runIDs, benchTurns, a.AccountID); err != nil {
		b.Fatal(err)
	}
	// As autovacuum leaves a table after a bulk of inserts: statistics
	// fresh and pages all-visible, so the aggregates' index-only scans read
	// no heap.
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE turns"); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d turns in %v", benchTurns, time.Since(start).Round(time.Millisecond))

	var d struct {
		Queues []struct{ Waiting int }
	}
	a.API(http.MethodGet, "/analytics/dashboard", nil).Must(http.StatusOK, &d)
	waiting := 0
	for _, q := range d.Queues {
		waiting += q.Waiting
	}
	if waiting != benchTurns/100 {
		b.Fatalf("the dashboard sees %d waiting turns, want %d", waiting, benchTurns/100)
	}

	// The timed requests are not checked against the OpenAPI document
	// (the one above was): the check costs more than what is measured.
	check := apptest.Check
	apptest.Check = nil
	defer func() { apptest.Check = check }()
	today := time.Now().UTC()
	for _, c := range []struct{ name, path string }{
		{"dashboard", "/analytics/dashboard"},
		{"summary/30d", "/analytics/summary"},
		{"summary/366d", fmt.Sprintf("/analytics/summary?from=%s&to=%s",
			today.AddDate(0, 0, -365).Format(time.DateOnly), today.Format(time.DateOnly))},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := a.API(http.MethodGet, c.path, nil); r.Status != http.StatusOK {
					b.Fatalf("%s: %d %s", c.path, r.Status, r.Body)
				}
			}
		})
	}
}
