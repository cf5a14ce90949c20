package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestDeferredWrites: a unit of work's deferred writes (and its BEGIN and
// COMMIT, which travel with its statements) keep a transaction's meaning —
// a later statement sees them, a failure among them is the unit's error
// and rolls everything back, and the connection goes back to the pool
// clean.
func TestDeferredWrites(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE probe_deferred (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM probe_deferred`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// A duplicate among the deferred writes fails the unit at its commit,
	// with the write's own (mapped) error, and nothing is kept.
	err := db.Do(ctx, func(ctx context.Context) error {
		if err := db.DeferWriteForTest(ctx, `INSERT INTO probe_deferred VALUES ($1)`, 1); err != nil {
			return err
		}
		return db.DeferWriteForTest(ctx, `INSERT INTO probe_deferred VALUES ($1)`, 1)
	})
	var pg *pgconn.PgError
	if err == nil || !strings.HasPrefix(err.Error(), "probe: ") || !errors.As(err, &pg) || pg.Code != "23505" {
		t.Fatalf("Do = %v, want the probe's unique violation", err)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d rows after a failed unit, want 0", n)
	}

	// A bun statement after a deferred write sees it; the commit keeps it.
	for i := 0; i < 3; i++ { // every pooled connection is clean again
		err = db.Do(ctx, func(ctx context.Context) error {
			if err := db.DeferWriteForTest(ctx, `INSERT INTO probe_deferred VALUES ($1)`, 10+i); err != nil {
				return err
			}
			var n int
			if err := db.IDB(ctx).NewRaw(`SELECT count(*) FROM probe_deferred WHERE id = ?`, 10+i).Scan(ctx, &n); err != nil {
				return err
			}
			if n != 1 {
				t.Errorf("the unit's own statement saw %d rows, want 1", n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}

	// A unit that fails after its writes left rolls them back.
	boom := errors.New("boom")
	err = db.Do(ctx, func(ctx context.Context) error {
		if err := db.DeferWriteForTest(ctx, `INSERT INTO probe_deferred VALUES ($1)`, 99); err != nil {
			return err
		}
		var n int
		if err := db.IDB(ctx).NewRaw(`SELECT count(*) FROM probe_deferred`).Scan(ctx, &n); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Do = %v, want boom", err)
	}
	if n := count(); n != 3 {
		t.Fatalf("%d rows after a rolled-back unit, want 3", n)
	}
}

// TestFuseWrites: runs of fusable writes on distinct tables become one
// statement of CTEs, parameters renumbered; a second write to a table, a
// write that is not fusable, or a WITH-led write ends a run.
func TestFuseWrites(t *testing.T) {
	sqls, args := postgres.FuseWritesForTest([][2]string{
		{"", "begin"},
		{"a", "INSERT INTO a VALUES ($1, $2)"},
		{"b", "UPDATE b SET v = $2 WHERE id = $1"},
		{"c", "WITH v AS (INSERT INTO c VALUES ($1) RETURNING id) INSERT INTO d SELECT id + $2 FROM v"},
		{"a", "INSERT INTO a VALUES ($1, $2)"},
		{"a", "UPDATE a SET v = $1"},
		{"", "commit"},
	}, [][]any{nil, {1, 2}, {3, 4}, {5, 6}, {7, 8}, {9}, nil})
	want := []string{
		"begin",
		"WITH w0 AS (INSERT INTO a VALUES ($1, $2)), w1 AS (UPDATE b SET v = $4 WHERE id = $3), " +
			"v AS (INSERT INTO c VALUES ($5) RETURNING id) INSERT INTO d SELECT id + $6 FROM v",
		"INSERT INTO a VALUES ($1, $2)",
		"UPDATE a SET v = $1",
		"commit",
	}
	if strings.Join(sqls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("fused:\n%s\nwant:\n%s", strings.Join(sqls, "\n"), strings.Join(want, "\n"))
	}
	if fmt.Sprint(args[1]) != "[1 2 3 4 5 6]" {
		t.Fatalf("fused arguments %v, want [1 2 3 4 5 6]", args[1])
	}
	sqls, _ = postgres.FuseWritesForTest([][2]string{{"a", "INSERT INTO a VALUES ($1)"}, {"b", "INSERT INTO b VALUES ($1)"}},
		[][]any{{1}, {2}})
	if want := "WITH w0 AS (INSERT INTO a VALUES ($1)) INSERT INTO b VALUES ($2)"; len(sqls) != 1 || sqls[0] != want {
		t.Fatalf("fused %q, want %q", sqls, want)
	}
}

// TestFusedWritesInAUnit: fused writes all land, a write after an insert
// of the same table sees it, and a fused statement's failure is mapped by
// the write whose table it names.
func TestFusedWritesInAUnit(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE probe_fa (id int PRIMARY KEY, v text);
		CREATE TABLE probe_fb (id int PRIMARY KEY); CREATE TABLE probe_fc (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	err := db.Do(ctx, func(ctx context.Context) error {
		for _, w := range []struct {
			table, sql string
			args       []any
		}{
			{"probe_fa", `INSERT INTO probe_fa VALUES ($1, $2)`, []any{1, "new"}},
			{"probe_fa", `UPDATE probe_fa SET v = $2 WHERE id = $1`, []any{1, "updated"}},
			{"probe_fb", `INSERT INTO probe_fb VALUES ($1)`, []any{2}},
			{"probe_fc", `WITH x AS (SELECT $1::int AS id) INSERT INTO probe_fc SELECT id FROM x`, []any{3}},
		} {
			if err := db.DeferFusableForTest(ctx, w.table, w.sql, w.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var v string
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT v FROM probe_fa WHERE id = 1),
		(SELECT count(*) FROM probe_fb WHERE id = 2) + (SELECT count(*) FROM probe_fc WHERE id = 3)`).Scan(&v, &n); err != nil {
		t.Fatal(err)
	}
	if v != "updated" || n != 2 {
		t.Fatalf("after the unit: probe_fa's v %q, %d of probe_fb's and probe_fc's rows; want updated, 2", v, n)
	}

	err = db.Do(ctx, func(ctx context.Context) error {
		if err := db.DeferFusableForTest(ctx, "probe_fa", `INSERT INTO probe_fa VALUES ($1, $2)`, 10, "x"); err != nil {
			return err
		}
		return db.DeferFusableForTest(ctx, "probe_fb", `INSERT INTO probe_fb VALUES ($1)`, 2)
	})
	var pg *pgconn.PgError
	if err == nil || !strings.HasPrefix(err.Error(), "probe probe_fb: ") || !errors.As(err, &pg) || pg.Code != "23505" {
		t.Fatalf("Do = %v, want probe_fb's unique violation", err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM probe_fa WHERE id = 10`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows of the failed unit (%v), want 0", n, err)
	}
}
