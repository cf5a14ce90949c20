package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/pgtest"
	"github.com/qms-dev/qms/test/testkit"
)

// TestMigrationMovesLineVersionsOntoCounters: migration 0250 rebuilds
// turn_counters with each run's line version beside its number, from a
// database at 0240 with runs that have both, either or neither, and the
// rebuilt table keeps the old one's key and cascade; the counters and
// versions then go on from where they were.
func TestMigrationMovesLineVersionsOntoCounters(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, pgtest.EmptyURL(t))
	if err := db.MigrateUpToForTest(ctx, 240); err != nil {
		t.Fatal(err)
	}
	qs := postgres.NewQueues(db)
	owned := testkit.Owners{Accounts: postgres.NewAccounts(db), Entities: postgres.NewEntities(db), Queues: qs}.Seed(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	var runs [4]string // both, a counter only, a line only, neither
	for i := range runs {
		run := queues.Run{ID: platform.NewID(platform.PrefixRun), AccountID: owned.AccountID, QueueID: owned.QueueID,
			Status: queues.RunOpen, IntakeOpen: true, OpenedAt: &now, CreatedAt: now, UpdatedAt: now}
		if err := qs.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		runs[i] = run.ID
	}
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO turn_counters (run_id, period, last_number) VALUES ($1, '2026-12-01', 41), ($2, '', 7)`,
			[]any{runs[0], runs[1]}},
		{`INSERT INTO turn_lines (run_id, version) VALUES ($1, 300), ($2, 12)`, []any{runs[0], runs[2]}},
	} {
		if _, err := db.Pool.Exec(ctx, stmt.sql, stmt.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	type counter struct {
		period  string
		number  int
		version int64
	}
	read := func() map[string]counter {
		t.Helper()
		rows, err := db.Pool.Query(ctx, `SELECT run_id, period, last_number, line_version FROM turn_counters`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]counter{}
		for rows.Next() {
			var (
				id string
				c  counter
			)
			if err := rows.Scan(&id, &c.period, &c.number, &c.version); err != nil {
				t.Fatal(err)
			}
			out[id] = c
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := map[string]counter{runs[0]: {"2026-12-01", 41, 300}, runs[1]: {"", 7, 0}, runs[2]: {"", 0, 12}}
	if got := read(); !reflect.DeepEqual(got, want) {
		t.Fatalf("turn_counters after the migration: %v, want %v", got, want)
	}
	var (
		linesGone bool
		cons      []string
	)
	err := db.Pool.QueryRow(ctx, `SELECT to_regclass('turn_lines') IS NULL,
		(SELECT array_agg(conname || ' ' || contype::text || ' ' || confdeltype::text ORDER BY conname)
		FROM pg_constraint WHERE conrelid = 'turn_counters'::regclass)`).Scan(&linesGone, &cons)
	if err != nil {
		t.Fatal(err)
	}
	if !linesGone {
		t.Error("turn_lines is still there")
	}
	if want := []string{"turn_counters_pkey p  ", "turn_counters_run_id_fkey f c"}; !reflect.DeepEqual(cons, want) {
		t.Errorf("turn_counters' constraints: %q, want %q", cons, want)
	}

	// Each run goes on from what it had: the next number after its
	// counter (1 with none, in any period), the next version after its line.
	tr := postgres.NewTurns(db)
	next := []struct {
		period  string
		number  int
		version int64
	}{{"2026-12-01", 42, 301}, {"", 8, 1}, {"2026-12-02", 1, 13}, {"2026-12-02", 1, 1}}
	for i, run := range runs {
		err := db.Do(ctx, func(ctx context.Context) error {
			n, err := tr.NextNumber(ctx, run, next[i].period)
			if err != nil {
				return err
			}
			v, err := tr.BumpLine(ctx, run, turns.LineChange{Reset: true})
			if err != nil {
				return err
			}
			if n != next[i].number || v != next[i].version {
				t.Errorf("run %d: number %d and line version %d, want %d and %d", i, n, v, next[i].number, next[i].version)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The key still cascades: a deleted run takes its counter with it.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM queue_runs WHERE id = $1`, runs[0]); err != nil {
		t.Fatal(err)
	}
	if _, ok := read()[runs[0]]; ok {
		t.Error("a deleted run's counter stayed")
	}
}
