package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestLockRunForIntakeDrawsOnlyForANewTurn: the number an intake's lock
// draws ahead is drawn only for a run of the account and a key no turn of
// the account has (so a replay commits nothing of it), follows the last
// committed number, and goes back with a rollback.
func TestLockRunForIntakeDrawsOnlyForANewTurn(t *testing.T) {
	p := openProcess(t, pgtest.URL(t))
	ctx := context.Background()
	owned := p.owners.Seed(t)
	turn := p.owners.Turn(t, owned, owned.QueueID)
	key := "used-key"
	turn.ID, turn.Seq, turn.Number, turn.DisplayCode = platform.NewID(platform.PrefixTurn), turn.Seq+1, 2, "2"
	turn.IdempotencyKey = &key
	if err := p.turns.Create(ctx, turn); err != nil {
		t.Fatal(err)
	}
	draw := &turns.NumberDraw{Padding: 0, Since: time.Now().Add(-turns.ReopenWindow)}
	errRollback := errors.New("roll back")

	// lock runs LockRunForIntake in a unit of work, committed unless
	// rollback.
	lock := func(in turns.IntakeLock, rollback bool) turns.IntakeLocked {
		t.Helper()
		var got turns.IntakeLocked
		err := p.db.Do(ctx, func(ctx context.Context) error {
			var err error
			if got, err = p.queues.LockRunForIntake(ctx, in); err != nil {
				return err
			}
			if rollback {
				return errRollback
			}
			return nil
		})
		if err != nil && !(rollback && errors.Is(err, errRollback)) {
			t.Fatal(err)
		}
		return got
	}
	drawn := func(got turns.IntakeLocked) int {
		if got.Drawn == nil {
			return 0
		}
		return got.Drawn.Number
	}

	// The counter starts with the first draw (the seeded turns were stored
	// directly, with numbers 1 and 2, without it): 1, whose code "1" is
	// held by the waiting turn.
	got := lock(turns.IntakeLock{RunID: turn.RunID, AccountID: owned.AccountID, Draw: draw}, false)
	if drawn(got) != 1 || !got.Drawn.CodeInUse || got.Run.ID != turn.RunID || got.Queue.ID != owned.QueueID {
		t.Fatalf("first draw: %+v (queue %s); want number 1, its code in use", got.Drawn, got.Queue.ID)
	}
	if got = lock(turns.IntakeLock{RunID: turn.RunID, AccountID: owned.AccountID, Key: &key, Draw: draw}, false); got.Replay == nil || got.Replay.ID != turn.ID || got.Drawn != nil {
		t.Fatalf("a used key: replay %v, drawn %+v; want the keyed turn and nothing drawn", got.Replay, got.Drawn)
	}
	if got = lock(turns.IntakeLock{RunID: turn.RunID, AccountID: "acc_other", Draw: draw}, false); got.Drawn != nil {
		t.Fatalf("another account's run: drawn %+v; want nothing", got.Drawn)
	}
	if got = lock(turns.IntakeLock{RunID: turn.RunID, AccountID: owned.AccountID, Draw: draw}, true); drawn(got) != 2 {
		t.Fatalf("draw then rollback: %+v; want 2", got.Drawn)
	}
	fresh := "fresh-key"
	if got = lock(turns.IntakeLock{RunID: turn.RunID, AccountID: owned.AccountID, Key: &fresh, Draw: draw}, false); drawn(got) != 2 || got.Replay != nil {
		t.Fatalf("after a replay, a refusal and a rollback: %+v, replay %v; want 2 again", got.Drawn, got.Replay)
	}
	if got = lock(turns.IntakeLock{RunID: "run_missing", AccountID: owned.AccountID, Draw: draw}, false); !platform.IsCode(got.RunErr, platform.CodeNotFound) || got.Drawn != nil {
		t.Fatalf("a missing run: %v, drawn %+v; want NOT_FOUND and nothing drawn", got.RunErr, got.Drawn)
	}
	if q, ok := p.queues.CachedQueueOfRun(turn.RunID); !ok || q.ID != owned.QueueID {
		t.Fatalf("CachedQueueOfRun after the lock: %s, %v; want %s", q.ID, ok, owned.QueueID)
	}
}
