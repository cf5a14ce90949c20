package turns_test

import (
	"context"
	"testing"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// aheadLocker is the memory repository with a process cache of queues,
// as the PostgreSQL adapter's: CachedQueueOfRun answers guess, the queue
// as the process last saw it, which a test makes stale, so the service
// draws a number ahead with it; the memory LockRunForIntake draws it.
type aheadLocker struct {
	turns.Repository
	guess queues.Queue
	// asked records, per call, whether a draw came with it.
	asked []bool
}

func (l *aheadLocker) CachedQueueOfRun(string) (queues.Queue, bool) { return l.guess, l.guess.ID != "" }

func (l *aheadLocker) LockRunForIntake(ctx context.Context, in turns.IntakeLock) (turns.IntakeLocked, error) {
	l.asked = append(l.asked, in.Draw != nil)
	return l.Repository.LockRunForIntake(ctx, in)
}

// A number drawn ahead with settings the queue no longer has is given back
// with a rollback and drawn again after the lock: the turn shows the
// queue's prefix and padding, and the run's numbers stay without a gap.
// One drawn with the queue's settings is the turn's number.
func TestIntakeRedrawsANumberDrawnWithStaleSettings(t *testing.T) {
	f := newFixture(t)
	q, runID := f.queue(queues.CreateInput{TurnPrefix: platform.Ptr("A"), TurnPadding: platform.Ptr(3)})
	stale := q.Queue
	stale.TurnPrefix, stale.TurnPadding = "Z", 2
	locker := &aheadLocker{Repository: f.repo, guess: stale}
	svc := turns.NewService(locker, f.queuesRepo, f.store, f.bus, f.jobs, f.clock, turns.Hooks{})

	create := func() turns.View {
		t.Helper()
		v, _, err := svc.Create(f.ctx, account, runID, turns.CreateInput{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	first := create()
	if first.Number != 1 || first.DisplayCode != "A001" {
		t.Fatalf("first turn: number %d, code %q; want 1, A001", first.Number, first.DisplayCode)
	}
	if len(locker.asked) != 2 || !locker.asked[0] || locker.asked[1] {
		t.Fatalf("locks (draw asked): %v; want a draw ahead, then the lock alone", locker.asked)
	}

	locker.guess, locker.asked = q.Queue, nil
	second := create()
	if second.Number != 2 || second.DisplayCode != "A002" {
		t.Fatalf("second turn: number %d, code %q; want 2, A002", second.Number, second.DisplayCode)
	}
	if len(locker.asked) != 1 || !locker.asked[0] {
		t.Fatalf("locks (draw asked): %v; want one, with its draw kept", locker.asked)
	}
}

// A replay draws nothing, and a refused intake gives its drawn number
// back: the next turn takes the number after the last one made.
func TestIntakeDrawAheadLeavesNoGap(t *testing.T) {
	f := newFixture(t)
	q, runID := f.queue(queues.CreateInput{})
	locker := &aheadLocker{Repository: f.repo, guess: q.Queue}
	svc := turns.NewService(locker, f.queuesRepo, f.store, f.bus, f.jobs, f.clock, turns.Hooks{})

	key := "replay-me"
	first, _, err := svc.Create(f.ctx, account, runID, turns.CreateInput{IdempotencyKey: &key})
	if err != nil {
		t.Fatal(err)
	}
	again, replayed, err := svc.Create(f.ctx, account, runID, turns.CreateInput{IdempotencyKey: &key})
	if err != nil || !replayed || again.ID != first.ID {
		t.Fatalf("replay: %s, replayed %v, %v; want %s", again.ID, replayed, err, first.ID)
	}
	if _, _, err := svc.Create(f.ctx, "acc_other", runID, turns.CreateInput{}); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account's run: %v; want FORBIDDEN", err)
	}
	if _, err := f.queues.SetIntake(f.ctx, account, runID, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Create(f.ctx, account, runID, turns.CreateInput{}); !platform.IsCode(err, turns.CodeIntakeClosed) {
		t.Fatalf("closed intake: %v; want %s", err, turns.CodeIntakeClosed)
	}
	if _, err := f.queues.SetIntake(f.ctx, account, runID, true); err != nil {
		t.Fatal(err)
	}
	next, _, err := svc.Create(f.ctx, account, runID, turns.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	if next.Number != first.Number+1 {
		t.Fatalf("after a replay and two refusals: number %d; want %d", next.Number, first.Number+1)
	}
	// A body with a member a guard declared may be shaped after the lock
	// (an access code's prefix): nothing is drawn ahead for it.
	locker.asked = nil
	if _, _, err := svc.Create(f.ctx, account, runID, turns.CreateInput{Extensions: turns.Extensions{"accessCode": "VIP-1"}}); err != nil {
		t.Fatal(err)
	}
	if len(locker.asked) != 1 || locker.asked[0] {
		t.Fatalf("locks (draw asked) for a body with a declared member: %v; want one, without a draw", locker.asked)
	}
}
