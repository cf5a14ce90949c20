package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestHotStatementPlansUseTheirIndexes: the generic plan of each statement
// of the hot routes, made on empty tables as a new process makes it (pgx
// prepares a statement once per connection, and PostgreSQL keeps the plan
// until the table's statistics change), reaches every row through an index
// condition: no sequential scan, and the indexes named below. A plan that
// filtered instead grows with its table: the draw once checked its code
// against every turn of the run and halved P3h (issue 16).
func TestHotStatementPlansUseTheirIndexes(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name, sql, args string
		want            []string
	}{
		{"draw", postgres.DrawNumberSQLForTest, "'run', '', 'A', 3, now()",
			[]string{"Index Cond: ((run_id = $1) AND (display_code = code.code))"}},
		{"draw ahead", postgres.DrawAheadSQLForTest, "'run', '', 'A', 3, now(), 'acc', NULL",
			[]string{"Index Cond: ((run_id = $1) AND (display_code = code.code))", "turns_idempotency_idx"}},
		{"draw ahead without a key", postgres.DrawAheadNoKeySQLForTest, "'run', '', 'A', 3, now(), 'acc'",
			[]string{"Index Cond: ((run_id = $1) AND (display_code = code.code))", "queue_runs_pkey"}},
		{"run lock", postgres.LockRunSQLForTest, "'run'", []string{"queue_runs_pkey", "queues_pkey"}},
		{"run lock with endpoints", postgres.LockRunEndpointsSQLForTest, "'run'",
			[]string{"queue_runs_pkey", "queues_pkey", "webhook_endpoints_account_idx"}},
		{"line and endpoints by run", postgres.RunLineEndpointsSQLForTest, "'run'",
			[]string{"turn_counters_pkey", "webhook_endpoints_account_idx"}},
		{"line and endpoints by turn", postgres.TurnLineEndpointsSQLForTest, "'turn'",
			[]string{"turns_pkey", "turn_counters_pkey", "webhook_endpoints_account_idx"}},
		{"turn view", postgres.TurnViewSQLForTest, "'turn'", []string{"turns_pkey", "turn_counters_pkey"}},
		{"take next", postgres.TakeSQLForTest, "'run', 'WAITING'",
			[]string{"Index Cond: ((run_id = $1) AND (status = $2))"}},
		{"line bump", postgres.BumpLineSQLForTest, "'run', '{}', '{}', false, 3", []string{"turn_counters_pkey"}},
		{"webhook success", postgres.RecordSuccessSQLForTest, "'d', 'SUCCEEDED', 200, now()",
			[]string{"Index Scan using webhook_deliveries_pkey", "Index Cond: (id = $1)"}},
		{"webhook deliveries", postgres.InsertDeliveriesSQLForTest,
			"'{d}', '{acc}', '{whe}', '{evt}', '{turn.created}', ARRAY['{}'::bytea], '{PENDING}', '{0}', '{NULL}', '{NULL}', '{NULL}', '{NULL}', '{tok}', ARRAY[now()]",
			[]string{"webhook_endpoints_pkey", "Index Cond: (id = d.endpoint_id)"}},
		{"an event located", postgres.LocateEventSQLForTest, "'acc', 'evt'",
			[]string{"Index Scan using events_pkey", "Index Cond: (id = $2)"}},
	} {
		stmt := fmt.Sprintf("hot%d", i)
		if _, err := conn.Exec(ctx, "PREPARE "+stmt+" AS "+c.sql); err != nil {
			t.Fatalf("%s: prepare: %v", c.name, err)
		}
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+stmt+" ("+c.args+")")
		if err != nil {
			t.Fatalf("%s: explain: %v", c.name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: explain: %v", c.name, err)
		}
		checkPlan(t, c.name, strings.Join(lines, "\n"), c.want)
	}
	turnViewsPlans(t, conn)
	smallDeliveriesPlan(t, conn)
}

// turnViewsPlans: each statement of a batch of turn views (one per size)
// reaches every turn, and its line, through their primary keys, whether
// its ids are all set or some are NULL.
func turnViewsPlans(t *testing.T, conn *pgx.Conn) {
	ctx := context.Background()
	for n := 2; n <= postgres.MaxViewBatchSizeForTest; n *= 2 {
		sql, size := postgres.TurnViewsSQLForTest(n)
		if size != n {
			t.Fatalf("turn views of %d: a statement for %d", n, size)
		}
		args := make([]string, n)
		for i := range args {
			args[i] = fmt.Sprintf("'turn%d'", i)
		}
		args[n-1] = "NULL"
		stmt := fmt.Sprintf("views%d", n)
		if _, err := conn.Exec(ctx, "PREPARE "+stmt+" AS "+sql); err != nil {
			t.Fatalf("turn views of %d: prepare: %v", n, err)
		}
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+stmt+" ("+strings.Join(args, ", ")+")")
		if err != nil {
			t.Fatalf("turn views of %d: explain: %v", n, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("turn views of %d: explain: %v", n, err)
		}
		checkPlan(t, fmt.Sprintf("turn views of %d", n), strings.Join(lines, "\n"),
			[]string{"Index Scan using turns_pkey on turns", "Index Cond: (id = k.id)", "turn_counters_pkey"})
	}
}

func checkPlan(t *testing.T, name, plan string, want []string) {
	t.Helper()
	if strings.Contains(plan, "Seq Scan") {
		t.Errorf("%s: a sequential scan:\n%s", name, plan)
	}
	for _, w := range want {
		if !strings.Contains(plan, w) {
			t.Errorf("%s: %q not in the plan:\n%s", name, w, plan)
		}
	}
}

// smallDeliveriesPlan: the generic plans of the webhook success and of an
// attempt's read, made the way their batches make them (successIndexOnlySQL in their transaction) on a
// small, freshly created and analyzed deliveries table, where PostgreSQL
// prefers a sequential scan to the primary key, are index lookups
// (issue 30; TestPostgresWebhookAttemptsUseTheirIndexFromTheFirst in
// test/contract counts the scans of the repository itself).
func smallDeliveriesPlan(t *testing.T, conn *pgx.Conn) {
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO accounts (id, name, plan, created_at, updated_at) VALUES ('acc', 'A', 'free', now(), now())`,
		`INSERT INTO webhook_endpoints (id, account_id, url, events, secret, created_at)
			VALUES ('whe', 'acc', 'http://127.0.0.1/', '{queue.closed}', 'plain:s', now())`,
		`INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, event, body, status, created_at)
			SELECT 'dlv_' || i, 'acc', 'whe', 'evt_' || i, 'queue.closed', '{}', 'PENDING', now() FROM generate_series(1, 40) i`,
		`ANALYZE webhook_deliveries`,
		`BEGIN`,
		postgres.SuccessIndexOnlySQLForTest,
		`PREPARE small_success AS ` + postgres.RecordSuccessSQLForTest,
		`PREPARE small_read AS ` + postgres.GetDeliveryToSendSQLForTest,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("small deliveries table: %s: %v", sql, err)
		}
	}
	defer conn.Exec(ctx, `ROLLBACK`) //nolint:errcheck // the connection closes next
	for _, c := range []struct{ name, explain, want string }{
		{"webhook success on a small analyzed table", `EXPLAIN EXECUTE small_success ('dlv_1', 'SUCCEEDED', 200, now())`,
			"Index Cond: (id = $1)"},
		{"webhook attempt's read on a small analyzed table", `EXPLAIN EXECUTE small_read ('dlv_1')`,
			"Index Cond: (id = $1)"},
	} {
		rows, err := conn.Query(ctx, c.explain)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, c.name, strings.Join(lines, "\n"), []string{"Index Scan using webhook_deliveries_pkey", c.want})
	}
}
