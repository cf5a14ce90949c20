package postgres_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// probeDB returns a fresh database with a throwaway probe table.
func probeDB(t *testing.T) *postgres.DB {
	t.Helper()
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(context.Background(), "CREATE TABLE probe (v text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return db
}

func probeValues(t *testing.T, db *postgres.DB) []string {
	t.Helper()
	var vs []string
	if err := db.Bun.NewSelect().Table("probe").Column("v").Order("v").Scan(context.Background(), &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

// timeout fails the test if f does not return in time: the hazards of
// sql.Conn.Raw show up as a hang, not as an error.
func timeout(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not return within %s", d)
	}
}

func TestWithPgxTxJoinsTheUnitOfWork(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		fail error
		want []string
	}{
		{"commit keeps both writes", nil, []string{"bun", "pgx"}},
		{"rollback drops both writes", errors.New("use case failed"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := probeDB(t)
			err := db.Do(ctx, func(ctx context.Context) error {
				var bunTx, bunPID int64
				if err := db.IDB(ctx).QueryRowContext(ctx, "SELECT txid_current(), pg_backend_pid()").Scan(&bunTx, &bunPID); err != nil {
					return err
				}
				if _, err := db.IDB(ctx).ExecContext(ctx, "INSERT INTO probe VALUES ('bun')"); err != nil {
					return err
				}
				err := db.WithPgxTx(ctx, func(tx pgx.Tx) error {
					var pgxTx, pgxPID int64
					if err := tx.QueryRow(ctx, "SELECT txid_current(), pg_backend_pid()").Scan(&pgxTx, &pgxPID); err != nil {
						return err
					}
					if pgxTx != bunTx || pgxPID != bunPID {
						return errors.New("pgx bridge runs in another transaction")
					}
					_, err := tx.Exec(ctx, "INSERT INTO probe VALUES ($1)", "pgx")
					return err
				})
				if err != nil {
					return err
				}
				return tc.fail
			})
			if !errors.Is(err, tc.fail) {
				t.Fatalf("Do = %v, want %v", err, tc.fail)
			}
			if got := probeValues(t, db); !equal(got, tc.want) {
				t.Fatalf("probe = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWithPgxTxRefusesToEndTheTransaction(t *testing.T) {
	db := probeDB(t)
	ctx := context.Background()
	err := db.Do(ctx, func(ctx context.Context) error {
		return db.WithPgxTx(ctx, func(tx pgx.Tx) error {
			if err := tx.Commit(ctx); err == nil {
				t.Error("Commit succeeded")
			}
			if err := tx.Rollback(ctx); err == nil {
				t.Error("Rollback succeeded")
			}
			if _, err := tx.Begin(ctx); err == nil {
				t.Error("Begin succeeded")
			}
			_, err := tx.Exec(ctx, "INSERT INTO probe VALUES ('kept')")
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := probeValues(t, db); !equal(got, []string{"kept"}) {
		t.Fatalf("probe = %v", got)
	}
}

func TestWithPgxTxSurvivesPanicAndBadConn(t *testing.T) {
	db := probeDB(t)
	ctx := context.Background()

	timeout(t, 10*time.Second, func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the handler's panic", r)
			}
		}()
		_ = db.Do(ctx, func(ctx context.Context) error {
			if _, err := db.IDB(ctx).ExecContext(ctx, "INSERT INTO probe VALUES ('panic')"); err != nil {
				return err
			}
			return db.WithPgxTx(ctx, func(pgx.Tx) error { panic("boom") })
		})
	})

	timeout(t, 10*time.Second, func() {
		err := db.Do(ctx, func(ctx context.Context) error {
			if _, err := db.IDB(ctx).ExecContext(ctx, "INSERT INTO probe VALUES ('badconn')"); err != nil {
				return err
			}
			return db.WithPgxTx(ctx, func(pgx.Tx) error { return driver.ErrBadConn })
		})
		if !errors.Is(err, driver.ErrBadConn) {
			t.Errorf("Do = %v, want driver.ErrBadConn", err)
		}
	})

	if got := probeValues(t, db); len(got) != 0 {
		t.Fatalf("probe = %v, want both units rolled back", got)
	}
	// The pool still works: no connection is stuck in a transaction.
	timeout(t, 10*time.Second, func() {
		if err := db.Do(ctx, func(ctx context.Context) error {
			_, err := db.IDB(ctx).ExecContext(ctx, "INSERT INTO probe VALUES ('after')")
			return err
		}); err != nil {
			t.Error(err)
		}
	})
}

func TestWithPgxTxOutsideAUnitOfWork(t *testing.T) {
	db := probeDB(t)
	ctx := context.Background()
	fail := errors.New("fail")
	err := db.WithPgxTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO probe VALUES ('dropped')")
		if err != nil {
			return err
		}
		return fail
	})
	if !errors.Is(err, fail) {
		t.Fatalf("WithPgxTx = %v", err)
	}
	if err := db.WithPgxTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO probe VALUES ('kept')")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := probeValues(t, db); !equal(got, []string{"kept"}) {
		t.Fatalf("probe = %v", got)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
