package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// TestCommitAnsweredRollbackFails: a unit that swallows a statement's
// failure and returns nil sends COMMIT into an aborted transaction, which
// PostgreSQL answers with the tag ROLLBACK, not an error. The unit must
// fail, not answer success for writes that did not commit; alone and as
// the last member of an intake chain (the chain's members then run again
// alone: only the swallowing one fails).
func TestCommitAnsweredRollbackFails(t *testing.T) {
	db := pgtest.New(t)
	defer postgres.ChainAgeForTest(time.Second)()
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE probe_chain (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	swallow := func(id int) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if err := db.DeferWriteForTest(ctx, `INSERT INTO probe_chain VALUES ($1)`, id); err != nil {
				return err
			}
			return db.WithPgxTx(ctx, func(tx pgx.Tx) error {
				_, _ = tx.Exec(ctx, `SELECT 1/0`) // swallowed: the transaction is aborted
				return nil
			})
		}
	}
	if err := db.Do(ctx, swallow(1)); err == nil || !strings.Contains(err.Error(), "ROLLBACK") {
		t.Fatalf("Do = %v; want the COMMIT answered ROLLBACK as an error", err)
	}
	if got := probeRows(t, db); len(got) != 0 {
		t.Fatalf("rows %v; want none", got)
	}
	insert := func(id int) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return db.DeferWriteForTest(ctx, `INSERT INTO probe_chain VALUES ($1)`, id)
		}
	}
	errs := chainProbe(t, db, [3]func(context.Context) error{insert(2), insert(3), swallow(4)})
	if errs[0] != nil || errs[1] != nil || errs[2] == nil || !strings.Contains(errs[2].Error(), "ROLLBACK") {
		t.Fatalf("chain outcomes %v; want nil, nil, the COMMIT answered ROLLBACK", errs)
	}
	if got := probeRows(t, db); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("rows %v; want [2 3]", got)
	}
}
