package contract_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// quietLogger keeps the expected failures of the job suite out of the
// test output.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestMemoryUnitOfWork(t *testing.T) {
	contract.RunUnitOfWork(t, func(t *testing.T) contract.UnitOfWorkHarness {
		// The memory store has no table a test can write to, so only the
		// transaction's control flow and its hooks are checked.
		s := memory.NewStore()
		return contract.UnitOfWorkHarness{UoW: s, AfterCommit: s.AfterCommit}
	})
}

func TestPostgresUnitOfWork(t *testing.T) {
	contract.RunUnitOfWork(t, func(t *testing.T) contract.UnitOfWorkHarness {
		db := pgtest.New(t)
		if _, err := db.Pool.Exec(context.Background(), "CREATE TABLE uow_probe (v text NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		return contract.UnitOfWorkHarness{
			UoW:         db,
			AfterCommit: db.AfterCommit,
			Record: func(ctx context.Context, v string) error {
				_, err := db.IDB(ctx).ExecContext(ctx, "INSERT INTO uow_probe (v) VALUES (?)", v)
				return err
			},
			Recorded: func(ctx context.Context) ([]string, error) {
				var vs []string
				err := db.IDB(ctx).NewSelect().Table("uow_probe").Column("v").Scan(ctx, &vs)
				return vs, err
			},
		}
	})
}

func TestMemoryJobRunner(t *testing.T) {
	contract.RunJobRunner(t, func(t *testing.T) contract.JobRunnerHarness {
		s := memory.NewStore()
		r := memory.NewJobRunner(s, platform.SystemClock{}, memory.JobRunnerOptions{Logger: quietLogger})
		return contract.JobRunnerHarness{Runner: r, UoW: s}
	})
}

func TestRiverJobRunner(t *testing.T) {
	contract.RunJobRunner(t, func(t *testing.T) contract.JobRunnerHarness {
		db := pgtest.New(t)
		r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger})
		return contract.JobRunnerHarness{Runner: r, UoW: db}
	})
}

func TestMemoryRateLimiter(t *testing.T) {
	contract.RunRateLimiter(t, func(*testing.T) ports.RateLimiter { return memory.NewRateLimiter() })
}

func TestPostgresRateLimiter(t *testing.T) {
	contract.RunRateLimiter(t, func(t *testing.T) ports.RateLimiter {
		return postgres.NewRateLimiter(pgtest.New(t))
	})
}
