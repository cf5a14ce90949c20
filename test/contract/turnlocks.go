package contract

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// RunTurnLocks checks the run locks and one-call reads of turns.Repository
// (RunLocks, Views): each answers what the separate reads would, on every
// backend. PostgreSQL sends each in one round trip; memory reads its
// tables; core/turns calls them alike.
func RunTurnLocks(t *testing.T, newSet NewSet, concurrent bool) {
	runTurnLocks1(t, newSet)
	runTurnLocks2(t, newSet, concurrent)
	runDrawnLineVersion(t, newSet)
}

// runDrawnLineVersion is part 3 of RunTurnLocks: a number drawn with the
// run's next line version (DrawnNumber.LineVersion, PostgreSQL) records the
// intake's change under it, an empty one too, and a rollback gives both
// back; a store that does not bump ahead answers the same through BumpLine.
func runDrawnLineVersion(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("a drawn number's line version takes the intake's change and goes back with it", func(t *testing.T) {
		t.Parallel()
		w := newTurnsWorld(t, newSet(t))
		draw := &turns.NumberDraw{Since: w.now.Add(-turns.ReopenWindow)}
		errRollback := errors.New("roll back")
		version := func() int64 {
			t.Helper()
			v, err := w.set.Turns.LineVersion(ctx, w.runID)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		// intake draws a number and records change as an intake does: under
		// the version the draw made, if it made one (PostgreSQL), else
		// bumped (memory), the answer the same.
		intake := func(change turns.LineChange, rollback bool) (int, int64) {
			t.Helper()
			var (
				n int
				v int64
			)
			err := w.set.UoW.Do(ctx, func(ctx context.Context) error {
				got, err := w.set.Turns.LockRunForIntake(ctx, turns.IntakeLock{RunID: w.runID, AccountID: w.owned.AccountID, Draw: draw})
				if err != nil {
					return err
				}
				if got.Drawn == nil {
					t.Fatal("nothing drawn")
				}
				n = got.Drawn.Number
				change.Version = got.Drawn.LineVersion
				if v, err = w.set.Turns.BumpLine(ctx, w.runID, change); err != nil {
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
			return n, v
		}
		v0 := version()
		joined := turns.LineKey{Rank: 2, Seq: 10}
		if n, v := intake(turns.LineChange{Added: []turns.LineKey{joined}}, false); n != 1 || v != v0+1 {
			t.Fatalf("a turn joining: number %d, line version %d; want 1 and %d", n, v, v0+1)
		}
		// A turn that does not join the line (WAITLISTED): an empty change,
		// a version all the same.
		if n, v := intake(turns.LineChange{}, false); n != 2 || v != v0+2 {
			t.Fatalf("a turn not joining: number %d, line version %d; want 2 and %d", n, v, v0+2)
		}
		if _, v := intake(turns.LineChange{Added: []turns.LineKey{{Rank: 2, Seq: 11}}}, true); v != v0+3 || version() != v0+2 {
			t.Fatalf("rolled back: version %d, then %d; want %d, then %d", v, version(), v0+3, v0+2)
		}
		last := turns.LineKey{Rank: 2, Seq: 12}
		if n, v := intake(turns.LineChange{Added: []turns.LineKey{last}}, false); n != 3 || v != v0+3 {
			t.Fatalf("after a rollback: number %d, line version %d; want 3 and %d again", n, v, v0+3)
		}
		changes, err := w.set.Turns.LineChanges(ctx, w.runID, v0, v0+3)
		if err != nil {
			t.Fatal(err)
		}
		want := []turns.LineChange{{Version: v0 + 1, Added: []turns.LineKey{joined}}, {Version: v0 + 2},
			{Version: v0 + 3, Added: []turns.LineKey{last}}}
		if len(changes) != len(want) {
			t.Fatalf("line changes: %+v; want %+v", changes, want)
		}
		for i, c := range changes {
			if c.Version != want[i].Version || c.Reset || len(c.Removed) != 0 || !slices.Equal(c.Added, want[i].Added) {
				t.Fatalf("line change %d: %+v; want %+v", i, c, want[i])
			}
		}
	})
}

// runTurnLocks1 is part 1 of RunTurnLocks: LockRunWithQueue and
// LockRunOfTurn read the run and its queue; LockRunForIntake draws only for
// a new turn and gives a rolled-back draw back; QueueForView is what the
// separate reads return.
func runTurnLocks1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("LockRunWithQueue and LockRunOfTurn read the run and its queue", func(t *testing.T) {
		t.Parallel()
		w := newTurnsWorld(t, newSet(t))
		tu := w.turn(t, nil)
		err := w.set.UoW.Do(ctx, func(ctx context.Context) error {
			run, q, err := w.set.Turns.LockRunWithQueue(ctx, w.runID)
			if err != nil || run.ID != w.runID || run.AccountID != w.owned.AccountID || q.ID != w.owned.QueueID {
				t.Errorf("LockRunWithQueue: run %s of %s, queue %s, %v; want %s, %s, %s",
					run.ID, run.AccountID, q.ID, err, w.runID, w.owned.AccountID, w.owned.QueueID)
			}
			account, run, q, err := w.set.Turns.LockRunOfTurn(ctx, tu.ID)
			if err != nil || account != w.owned.AccountID || run.ID != w.runID || q.ID != w.owned.QueueID {
				t.Errorf("LockRunOfTurn: account %s, run %s, queue %s, %v", account, run.ID, q.ID, err)
			}
			if _, _, err := w.set.Turns.LockRunWithQueue(ctx, "run_missing"); !platform.IsCode(err, platform.CodeNotFound) {
				t.Errorf("LockRunWithQueue of a missing run: %v; want NOT_FOUND", err)
			}
			if _, _, _, err := w.set.Turns.LockRunOfTurn(ctx, "turn_missing"); !platform.IsCode(err, platform.CodeNotFound) {
				t.Errorf("LockRunOfTurn of a missing turn: %v; want NOT_FOUND", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LockRunForIntake draws only for a new turn and gives a rolled-back draw back", func(t *testing.T) {
		t.Parallel()
		w := newTurnsWorld(t, newSet(t))
		key := "used-key"
		// A waiting turn holds code "1", stored without the counter: the
		// first draw is 1, its code in use.
		used := w.turn(t, func(tu *turns.Turn) { tu.DisplayCode, tu.Number, tu.IdempotencyKey = "1", 1, &key })
		draw := &turns.NumberDraw{Padding: 0, Since: w.now.Add(-turns.ReopenWindow)}
		errRollback := errors.New("roll back")
		lock := func(in turns.IntakeLock, rollback bool) turns.IntakeLocked {
			t.Helper()
			var got turns.IntakeLocked
			err := w.set.UoW.Do(ctx, func(ctx context.Context) error {
				var err error
				if got, err = w.set.Turns.LockRunForIntake(ctx, in); err != nil {
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
		account := w.owned.AccountID
		got := lock(turns.IntakeLock{RunID: w.runID, AccountID: account, Draw: draw}, false)
		if drawn(got) != 1 || !got.Drawn.CodeInUse || got.Drawn.Seq == 0 || got.Run.ID != w.runID || got.Queue.ID != w.owned.QueueID {
			t.Fatalf("first draw: %+v (run %s, queue %s); want number 1, its code in use, a seq", got.Drawn, got.Run.ID, got.Queue.ID)
		}
		if got = lock(turns.IntakeLock{RunID: w.runID, AccountID: account, Key: &key, Draw: draw}, false); got.Replay == nil || got.Replay.ID != used.ID || got.Drawn != nil {
			t.Fatalf("a used key: replay %v, drawn %+v; want the keyed turn and nothing drawn", got.Replay, got.Drawn)
		}
		if got = lock(turns.IntakeLock{RunID: w.runID, AccountID: "acc_other", Draw: draw}, false); got.Drawn != nil || got.Run.AccountID != account {
			t.Fatalf("another account's run: drawn %+v, run of %s; want nothing drawn, the run read", got.Drawn, got.Run.AccountID)
		}
		if got = lock(turns.IntakeLock{RunID: w.runID, AccountID: account, Draw: draw}, true); drawn(got) != 2 || got.Drawn.CodeInUse {
			t.Fatalf("draw then rollback: %+v; want 2, free", got.Drawn)
		}
		fresh := "fresh-key"
		if got = lock(turns.IntakeLock{RunID: w.runID, AccountID: account, Key: &fresh, Draw: draw}, false); drawn(got) != 2 || got.Replay != nil {
			t.Fatalf("after a replay, a refusal and a rollback: %+v, replay %v; want 2 again", got.Drawn, got.Replay)
		}
		if got = lock(turns.IntakeLock{RunID: w.runID, AccountID: account}, false); got.Drawn != nil || got.RunErr != nil {
			t.Fatalf("no draw asked: %+v, %v; want nothing drawn", got.Drawn, got.RunErr)
		}
		if got = lock(turns.IntakeLock{RunID: "run_missing", AccountID: account, Key: &key, Draw: draw}, false); got.Replay == nil {
			t.Fatalf("a used key on a missing run: %+v; want the replay whatever the run", got)
		}
		if got = lock(turns.IntakeLock{RunID: "run_missing", AccountID: account, Draw: draw}, false); !platform.IsCode(got.RunErr, platform.CodeNotFound) || got.Drawn != nil {
			t.Fatalf("a missing run: %v, drawn %+v; want NOT_FOUND and nothing drawn", got.RunErr, got.Drawn)
		}
		// A backend with a process cache knows the run's queue once it
		// locked it; one without says so.
		if q, ok := w.set.Turns.CachedQueueOfRun(w.runID); ok && q.ID != w.owned.QueueID {
			t.Fatalf("CachedQueueOfRun after the lock: %s; want %s", q.ID, w.owned.QueueID)
		}
		if _, ok := w.set.Turns.CachedQueueOfRun("run_never_seen"); ok {
			t.Fatal("CachedQueueOfRun of a run never read: ok; want false")
		}
	})

	t.Run("QueueForView is what the separate reads return", func(t *testing.T) {
		t.Parallel()
		w := newTurnsWorld(t, newSet(t))
		for i, s := range []float64{10, 20, 30} {
			at, secs := w.now.Add(time.Duration(i)*time.Minute), s
			w.turn(t, func(tu *turns.Turn) { tu.Status, tu.FinishedAt, tu.ServiceSeconds = turns.Completed, &at, &secs })
		}
		var sts []string
		var samples []float64
		err := w.set.UoW.Do(ctx, func(ctx context.Context) error {
			got, s, err := w.set.Turns.QueueForView(ctx, w.owned.QueueID)
			for _, st := range got {
				sts = append(sts, st.ID)
			}
			samples = s
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		want, err := w.set.Turns.RecentServiceSeconds(ctx, w.owned.QueueID, turns.ServiceSamples)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sts, []string{w.station}) || !slices.Equal(samples, want) || !slices.Equal(samples, []float64{30, 20, 10}) {
			t.Fatalf("QueueForView: stations %v, samples %v; want [%s], %v", sts, samples, w.station, want)
		}
	})
}

// runTurnLocks2 is part 2 of RunTurnLocks: EnterRun gates a run's intakes in
// the process, or lets them in.
func runTurnLocks2(t *testing.T, newSet NewSet, concurrent bool) {
	ctx := context.Background()
	t.Run("EnterRun gates a run's intakes in the process, or lets them in", func(t *testing.T) {
		t.Parallel()
		w := newTurnsWorld(t, newSet(t))
		leave, err := w.set.Turns.EnterRun(ctx, w.runID)
		if err != nil {
			t.Fatal(err)
		}
		other, err := w.set.Turns.EnterRun(ctx, "run_other")
		if err != nil {
			t.Fatalf("another run's gate: %v; want it open", err)
		}
		other()
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		second, err := w.set.Turns.EnterRun(short, w.runID)
		if concurrent {
			// PostgreSQL's gate holds the second until the first leaves.
			if err == nil {
				second()
				t.Fatal("a second intake of the run passed the gate while the first held it")
			}
		} else if err != nil {
			t.Fatalf("memory lets every intake in (its store's lock orders them): %v", err)
		} else {
			second()
		}
		leave()
		again, err := w.set.Turns.EnterRun(ctx, w.runID)
		if err != nil {
			t.Fatalf("after leave: %v; want the gate open", err)
		}
		again()
	})
	t.Run("RunIntake runs an intake as a unit of work: undone on failure, its hooks after the commit", func(t *testing.T) {
		t.Parallel()
		w := newTurnsWorld(t, newSet(t))
		next := func(ctx context.Context) int {
			n, err := w.set.Turns.NextNumber(ctx, w.runID, "p")
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		var hooked []int
		refused := errors.New("refused by the use case")
		err := w.set.Turns.RunIntake(ctx, w.runID, func(ctx context.Context, carry any) (any, error) {
			if carry != nil {
				t.Errorf("a lone intake was carried %v; want nil", carry)
			}
			n := next(ctx)
			w.set.UoW.AfterCommit(ctx, func() { hooked = append(hooked, n) })
			return "line", refused
		})
		if !errors.Is(err, refused) || len(hooked) != 0 {
			t.Fatalf("a refused intake: %v, hooks ran for %v; want the refusal and no hook", err, hooked)
		}
		err = w.set.Turns.RunIntake(ctx, w.runID, func(ctx context.Context, _ any) (any, error) {
			n := next(ctx)
			w.set.UoW.AfterCommit(ctx, func() { hooked = append(hooked, n) })
			if len(hooked) != 0 {
				t.Error("a hook ran before the commit")
			}
			return "line", nil
		})
		if err != nil || !slices.Equal(hooked, []int{1}) {
			t.Fatalf("an intake: %v, hooks ran for %v; want nil and [1] (the refused draw rolled back)", err, hooked)
		}
		if n := next(ctx); n != 2 {
			t.Fatalf("the number after both: %d; want 2", n)
		}
	})
}
