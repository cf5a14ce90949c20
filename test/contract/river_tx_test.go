package contract_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestRiverJobSharesTheBunTransaction checks the point of the pgx bridge:
// a job River inserts in a unit of work exists exactly when the unit's bun
// writes do. The runner is not started, so the jobs stay in river_job.
func TestRiverJobSharesTheBunTransaction(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fail  error
		count int
	}{
		{"commit keeps the change and its job", nil, 1},
		{"rollback drops the change and its job", errors.New("use case failed"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.New(t)
			if _, err := db.Pool.Exec(ctx, "CREATE TABLE change (id int)"); err != nil {
				t.Fatal(err)
			}
			r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger})
			r.Register(ports.JobKind{Name: "fate", Handler: func(context.Context, ports.JobContext) error { return nil }})
			err := db.Do(ctx, func(ctx context.Context) error {
				if _, err := db.IDB(ctx).ExecContext(ctx, "INSERT INTO change VALUES (1)"); err != nil {
					return err
				}
				if err := r.Schedule(ctx, platform.Job{Kind: "fate", Args: map[string]int{"change": 1}}); err != nil {
					return err
				}
				// bun still works after River used the transaction.
				if _, err := db.IDB(ctx).ExecContext(ctx, "INSERT INTO change VALUES (2)"); err != nil {
					return err
				}
				return tc.fail
			})
			if !errors.Is(err, tc.fail) {
				t.Fatalf("Do = %v", err)
			}
			var changes, jobs int
			if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM change").Scan(&changes); err != nil {
				t.Fatal(err)
			}
			if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'fate'").Scan(&jobs); err != nil {
				t.Fatal(err)
			}
			if changes != 2*tc.count || jobs != tc.count {
				t.Fatalf("%d change rows and %d jobs, want %d and %d", changes, jobs, 2*tc.count, tc.count)
			}
		})
	}
}

// TestRiverUniqueKeyAcrossTransactions schedules one UniqueKey from
// concurrent units of work, as concurrent requests in several processes
// would: the unique index makes the later ones wait for the first to
// commit, then skip.
func TestRiverUniqueKeyAcrossTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger})
	r.Register(ports.JobKind{Name: "once", Handler: func(context.Context, ports.JobContext) error { return nil }})
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Do(ctx, func(ctx context.Context) error {
				err := r.Schedule(ctx, platform.Job{Kind: "once", Args: map[string]int{"i": i}, UniqueKey: "expire:turn_1", RunAt: time.Now().Add(time.Hour)})
				time.Sleep(50 * time.Millisecond) // hold the transaction open
				return err
			})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var jobs int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'once'").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 1 {
		t.Fatalf("%d jobs, want 1", jobs)
	}
}
