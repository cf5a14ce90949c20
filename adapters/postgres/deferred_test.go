package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

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
