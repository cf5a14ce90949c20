package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestDrawPlansLookUpTheCodeByIndex: the generic plan of each draw
// statement, made on an empty turns table as a new process makes it (pgx
// prepares a statement once per connection and keeps its plan), finds a
// turn holding the drawn code through turns_code_idx with the code as an
// index condition. A plan that filtered the run's turns by code instead
// made every intake read its whole run, and halved P3h (issue 16).
func TestDrawPlansLookUpTheCodeByIndex(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ sql, types, args string }{
		"draw": {postgres.DrawNumberSQLForTest, "text, text, text, int, timestamptz",
			"'run', '', 'A', 3, now()"},
		"draw ahead": {postgres.DrawAheadSQLForTest, "text, text, text, int, timestamptz, text, text",
			"'run', '', 'A', 3, now(), 'acc', NULL"},
	} {
		stmt := strings.ReplaceAll(name, " ", "_")
		if _, err := conn.Exec(ctx, "PREPARE "+stmt+" ("+c.types+") AS "+c.sql); err != nil {
			t.Fatalf("%s: prepare: %v", name, err)
		}
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+stmt+" ("+c.args+")")
		if err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "using turns_code_idx on turns") ||
			!strings.Contains(plan, "Index Cond: ((run_id = $1) AND (display_code = code.code))") {
			t.Errorf("%s: the code is not looked up by turns_code_idx:\n%s", name, plan)
		}
	}
}
