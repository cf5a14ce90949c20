package postgres_test

import (
	"context"
	"testing"

	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestLineBumpForetoldUnderTheRunLock: a bump in a transaction that locked
// the run with a statement that read its line version takes the next
// version without asking, and goes out with the commit; the versions stay
// the ones PostgreSQL counts, bump after bump. A version changed behind the
// lock's back (breaking the rule that only the run's lock holder bumps it)
// fails the transaction instead of recording a change under a wrong
// version.
func TestLineBumpForetoldUnderTheRunLock(t *testing.T) {
	p := openProcess(t, pgtest.URL(t))
	ctx := context.Background()
	owned := p.owners.Seed(t)
	turn := p.owners.Turn(t, owned, owned.QueueID)
	stored := func() (version int64, changes int) {
		t.Helper()
		err := p.db.Pool.QueryRow(ctx, `SELECT coalesce((SELECT line_version FROM turn_counters WHERE run_id = $1), 0),
			(SELECT count(*) FROM turn_line_changes WHERE run_id = $1)`, turn.RunID).Scan(&version, &changes)
		if err != nil {
			t.Fatal(err)
		}
		return version, changes
	}
	change := turns.LineChange{Added: []turns.LineKey{turn.Key()}}
	for want := int64(1); want <= 3; want++ {
		err := p.db.Do(ctx, func(ctx context.Context) error {
			if _, _, err := p.turns.LockRunWithQueue(ctx, turn.RunID); err != nil {
				return err
			}
			v, err := p.turns.BumpLine(ctx, turn.RunID, change)
			if err != nil {
				return err
			}
			if v != want {
				t.Errorf("bump %d answered version %d", want, v)
			}
			v, err = p.turns.BumpLine(ctx, turn.RunID, change) // twice in one transaction
			if v != want+1 {
				t.Errorf("second bump of the transaction answered version %d, want %d", v, want+1)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if v, n := stored(); v != want+1 || n != int(want+1) {
			t.Fatalf("after bump %d: version %d with %d changes stored, want %d and %d", want, v, n, want+1, want+1)
		}
		// The next round starts from the stored version.
		if _, err := p.db.Pool.Exec(ctx, `DELETE FROM turn_line_changes WHERE run_id = $1 AND version > $2`, turn.RunID, want); err != nil {
			t.Fatal(err)
		}
		if _, err := p.db.Pool.Exec(ctx, `UPDATE turn_counters SET line_version = $2 WHERE run_id = $1`, turn.RunID, want); err != nil {
			t.Fatal(err)
		}
	}

	// Two transactions on the run: the second's lock waits for the first,
	// which bumps and commits meanwhile; the second must foretell from the
	// version the first committed (its lock statement's own snapshot,
	// taken before the wait, still shows the older one).
	before, _ := stored()
	locked, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- p.db.Do(ctx, func(ctx context.Context) error {
			if _, _, err := p.turns.LockRunWithQueue(ctx, turn.RunID); err != nil {
				return err
			}
			if _, err := p.turns.BumpLine(ctx, turn.RunID, change); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	second := make(chan error, 1)
	go func() {
		second <- p.db.Do(ctx, func(ctx context.Context) error {
			if _, _, _, err := p.turns.LockRunOfTurn(ctx, turn.ID); err != nil {
				return err
			}
			v, err := p.turns.BumpLine(ctx, turn.RunID, change)
			if err == nil && v != before+2 {
				t.Errorf("the waiting transaction foretold version %d, want %d", v, before+2)
			}
			return err
		})
	}()
	for waiting := false; !waiting; {
		err := p.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the transaction that waited for the run: %v", err)
	}
	if v, _ := stored(); v != before+2 {
		t.Fatalf("after two bumps: version %d, want %d", v, before+2)
	}

	before, changes := stored()
	err := p.db.Do(ctx, func(ctx context.Context) error {
		if _, _, err := p.turns.LockRunWithQueue(ctx, turn.RunID); err != nil {
			return err
		}
		// Behind the lock's back, from another connection.
		if _, err := p.db.Pool.Exec(context.Background(), `UPDATE turn_counters SET line_version = line_version + 5 WHERE run_id = $1`, turn.RunID); err != nil {
			t.Fatal(err)
		}
		_, err := p.turns.BumpLine(ctx, turn.RunID, change)
		return err
	})
	if err == nil {
		t.Fatal("a bump under a stale version committed")
	}
	if v, n := stored(); v != before+5 || n != changes {
		t.Fatalf("after the failed bump: version %d with %d changes, want %d and %d", v, n, before+5, changes)
	}
}
