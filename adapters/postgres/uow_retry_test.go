package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/pgtest"
)

// TestUnitOfWorkRetriesADeadlock makes a real deadlock: two units of work
// lock two rows in opposite orders, each waiting for the other at its
// second lock. PostgreSQL kills one side with 40P01; Do runs that side
// again whole, so both units of work succeed and each row ends up with
// both writes.
func TestUnitOfWorkRetriesADeadlock(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE probe_rows (id int PRIMARY KEY, writes int NOT NULL);
		INSERT INTO probe_rows VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	var firstLocks sync.WaitGroup
	firstLocks.Add(2)
	var runs atomic.Int32
	lockBoth := func(first, second int) func(ctx context.Context) error {
		attempt := 0
		return func(ctx context.Context) error {
			attempt++
			runs.Add(1)
			tx := db.IDB(ctx)
			if _, err := tx.ExecContext(ctx, `UPDATE probe_rows SET writes = writes + 1 WHERE id = ?`, first); err != nil {
				return err
			}
			if attempt == 1 {
				// Both sides hold their first row before either asks for
				// its second: the cycle is certain.
				firstLocks.Done()
				firstLocks.Wait()
			}
			_, err := tx.ExecContext(ctx, `UPDATE probe_rows SET writes = writes + 1 WHERE id = ?`, second)
			return err
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- db.Do(ctx, lockBoth(1, 2)) }()
	go func() { errs <- db.Do(ctx, lockBoth(2, 1)) }()
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("a unit of work failed: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the units of work did not finish")
		}
	}
	if runs.Load() < 3 {
		t.Fatalf("the deadlock was not retried: %d runs of the two units of work", runs.Load())
	}
	if got := db.TxRetries(); got < 1 {
		t.Fatalf("TxRetries = %d, want at least 1", got)
	}
	var writes []int
	if err := db.Bun.NewSelect().Table("probe_rows").Column("writes").Order("id").Scan(ctx, &writes); err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 || writes[0] != 2 || writes[1] != 2 {
		t.Fatalf("writes per row = %v, want [2 2]: the killed side's first write must be rolled back and redone once", writes)
	}
}
