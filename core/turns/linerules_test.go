package turns_test

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// The line rules of issue 10: each is also an invariant of the
// mixed-workload history checker (test/history).

// setNumberingDaily switches schedule.resetNumberingDaily of the run's
// queue behind the queues service (it has no use case for it yet).
func (f *fixture) setNumberingDaily(queueID string, on bool) {
	f.t.Helper()
	err := f.store.Do(f.ctx, func(ctx context.Context) error {
		q, err := f.queuesRepo.GetQueueForUpdate(ctx, queueID)
		if err != nil {
			return err
		}
		q.Schedule.ResetNumberingDaily = platform.Ptr(on)
		return f.queuesRepo.UpdateQueue(ctx, q)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func TestSwitchingDailyNumberingNeverRepeatsACode(t *testing.T) {
	f := newFixture(t)
	q, run := f.queue(queues.CreateInput{TurnPrefix: platform.Ptr("A")})
	codes := map[string]bool{}
	take := func() string {
		v := f.take(run, turns.CreateInput{})
		if codes[v.DisplayCode] {
			t.Fatalf("code %s given twice while both wait", v.DisplayCode)
		}
		codes[v.DisplayCode] = true
		return v.DisplayCode
	}
	take()
	take()
	f.setNumberingDaily(q.ID, true) // on: takes effect at the next local midnight
	if got := take(); got != "A3" {
		t.Fatalf("switched on: numbering goes on, want A3, got %s", got)
	}
	f.setNumberingDaily(q.ID, false) // off: no rewind to an older count
	if got := take(); got != "A4" {
		t.Fatalf("switched off: numbering goes on, want A4, got %s", got)
	}
	f.setNumberingDaily(q.ID, true)
	take()
	f.clock.Advance(24 * time.Hour) // the next local day restarts, skipping codes still held
	if got := take(); got != "A6" {
		t.Fatalf("new day with A1..A5 waiting: want A6 (1..5 are held), got %s", got)
	}
}

func TestKeptNumbersNeverRepeatACode(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{TurnPrefix: platform.Ptr("A")})
	walkIn := f.take(run, turns.CreateInput{}) // A1
	var kept, clash turns.Turn
	err := f.store.Do(f.ctx, func(ctx context.Context) error {
		var err error
		// A forward keeping A2 while A2 is free keeps it.
		if kept, err = f.svc.Admit(ctx, account, run, turns.Admission{Number: 2, DisplayCode: "A2"}); err != nil {
			return err
		}
		// A forward keeping A1, which the walk-in holds, draws a number.
		clash, err = f.svc.Admit(ctx, account, run, turns.Admission{Number: 1, DisplayCode: "A1"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if kept.DisplayCode != "A2" {
		t.Fatalf("free code kept: %s", kept.DisplayCode)
	}
	if clash.DisplayCode == walkIn.DisplayCode || clash.DisplayCode != "A3" {
		t.Fatalf("a held code is drawn anew, skipping the kept A2: want A3, got %s", clash.DisplayCode)
	}
	if got := f.take(run, turns.CreateInput{}).DisplayCode; got != "A4" {
		t.Fatalf("own numbering goes on after the drawn one: want A4, got %s", got)
	}
	// A code whose turn may still come back is in use too: the walk-in's
	// cancellation can be undone for 5 minutes, a no-show can re-enter.
	must(t)(f.svc.Cancel(f.ctx, account, walkIn.ID))
	again := admit(t, f, run, turns.Admission{Number: 1, DisplayCode: "A1"})
	if again.DisplayCode == "A1" {
		t.Fatal("kept A1 while the cancelled A1 can still be reopened")
	}
	f.clock.Advance(turns.ReopenWindow + time.Second)
	if got := admit(t, f, run, turns.Admission{Number: 1, DisplayCode: "A1"}); got.DisplayCode != "A1" {
		t.Fatalf("A1 is free once its turn can no longer come back: got %s", got.DisplayCode)
	}
}

func admit(t *testing.T, f *fixture, run string, a turns.Admission) turns.Turn {
	t.Helper()
	got, err := f.svc.Admit(f.ctx, account, run, a)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAWaitlistIsAQueue(t *testing.T) {
	f := newFixture(t)
	// Without autoPromote a new turn joins the waitlist while anyone is on
	// it, even when staff made room.
	_, manual := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(1),
		WaitlistEnabled: platform.Ptr(true), AutoPromote: platform.Ptr(false)}})
	a := f.take(manual, turns.CreateInput{})
	w := f.take(manual, turns.CreateInput{})
	must(t)(f.svc.Cancel(f.ctx, account, a.ID))
	if late := f.take(manual, turns.CreateInput{}); late.Status != turns.Waitlisted {
		t.Fatalf("a later arrival overtook the waitlist: %s", late.Status)
	}
	if got := must(t)(f.svc.Release(f.ctx, account, w.ID)); got.Status != turns.Waiting {
		t.Fatalf("staff promote by release: %s", got.Status)
	}

	// With autoPromote a reopened waitlisted turn is promoted when there
	// is room.
	_, auto := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(1), WaitlistEnabled: platform.Ptr(true)},
		DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true)}})
	b := f.take(auto, turns.CreateInput{})
	x := f.take(auto, turns.CreateInput{})
	must(t)(f.svc.Cancel(f.ctx, account, x.ID)) // x leaves the waitlist
	must(t)(f.svc.Cancel(f.ctx, account, b.ID)) // room
	if got := must(t)(f.svc.Reopen(f.ctx, account, x.ID)); got.Status != turns.Waiting {
		t.Fatalf("reopened waitlisted turn with room: %s, want WAITING", got.Status)
	}
}

func TestUndoNeedsNoRoom(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(1), WaitlistEnabled: platform.Ptr(true)},
		DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true)}})
	a := f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{}) // waitlisted
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	must(t)(f.svc.Start(f.ctx, account, a.ID))
	must(t)(f.svc.Complete(f.ctx, account, a.ID)) // b promoted into the freed place
	if got := f.get(b.ID); got.Status != turns.Waiting {
		t.Fatalf("b promoted: %s", got.Status)
	}
	// The completion was a mistake: undone although the run is full.
	if got := must(t)(f.svc.Reopen(f.ctx, account, a.ID)); got.Status != turns.InService {
		t.Fatalf("reopen of a completed turn in a full run: %s", got.Status)
	}
	c := f.take(run, turns.CreateInput{})
	if c.Status != turns.Waitlisted {
		t.Fatalf("over capacity after the undo, a new turn waits for room: %s", c.Status)
	}
	// Same for a no-show.
	must(t)(f.svc.Complete(f.ctx, account, a.ID)) // c promoted
	d := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	must(t)(f.svc.NoShow(f.ctx, account, d.ID)) // room, and the waitlist is empty
	f.take(run, turns.CreateInput{})            // fills it
	if got := must(t)(f.svc.Reopen(f.ctx, account, d.ID)); got.Status != turns.Called {
		t.Fatalf("reopen of a no-show in a full run: %s", got.Status)
	}
}

// A cancelled waiting turn reopens to its place in a full run too: the
// room its cancel made went to the waitlist (the history checker's capacity
// allowance must count this undo, not only reopens into service).
func TestUndoOfACancelNeedsNoRoom(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(1), WaitlistEnabled: platform.Ptr(true)},
		DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true)}})
	a := f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{})       // waitlisted
	must(t)(f.svc.Cancel(f.ctx, account, a.ID)) // b promoted into the freed place
	if got := f.get(b.ID); got.Status != turns.Waiting {
		t.Fatalf("b promoted: %s", got.Status)
	}
	if got := must(t)(f.svc.Reopen(f.ctx, account, a.ID)); got.Status != turns.Waiting {
		t.Fatalf("reopen of a cancelled waiting turn in a full run: %s", got.Status)
	}
	if got := f.get(b.ID); got.Status != turns.Waiting {
		t.Fatalf("b after the undo: %s", got.Status)
	}
}

func TestHeldCallIsNextOnRelease(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{})
	a := f.take(run, turns.CreateInput{})
	f.take(run, turns.CreateInput{})
	c := f.take(run, turns.CreateInput{})
	must(t)(f.svc.Call(f.ctx, account, c.ID, turns.CallInput{})) // out of order
	must(t)(f.svc.Hold(f.ctx, account, c.ID))
	got := must(t)(f.svc.Release(f.ctx, account, c.ID))
	if pos(got) != 1 {
		t.Fatalf("a held call released: position %d, want 1", pos(got))
	}
	if next := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{})); next.ID != c.ID {
		t.Fatalf("next took %s, want the released call %s", next.DisplayCode, c.DisplayCode)
	}
	// A turn held while waiting keeps its arrival place.
	must(t)(f.svc.Hold(f.ctx, account, a.ID))
	if got := must(t)(f.svc.Release(f.ctx, account, a.ID)); pos(got) != 1 {
		t.Fatalf("held while waiting keeps its place: %d", pos(got))
	}
	// Priority still comes first: a HIGH arrival goes before the released call of a NORMAL turn.
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	d := f.take(run, turns.CreateInput{})
	e := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	must(t)(f.svc.Hold(f.ctx, account, e.ID))
	must(t)(f.svc.SetPriority(f.ctx, account, d.ID, turns.PriorityInput{Priority: platform.Ptr(queues.PriorityHigh)}))
	must(t)(f.svc.Release(f.ctx, account, e.ID))
	if pos(f.get(d.ID)) != 1 || pos(f.get(e.ID)) != 2 {
		t.Fatalf("HIGH first, then the released call: %d %d", pos(f.get(d.ID)), pos(f.get(e.ID)))
	}
}

func TestAClosedRunAdmitsNobodyAutomatically(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(1), WaitlistEnabled: platform.Ptr(true)}})
	a := f.take(run, turns.CreateInput{})
	w := f.take(run, turns.CreateInput{})
	b := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	if b.ID != a.ID {
		t.Fatal("a called")
	}
	if _, err := f.queues.CloseRun(f.ctx, account, run); err != nil {
		t.Fatal(err)
	}
	must(t)(f.svc.Start(f.ctx, account, a.ID))
	must(t)(f.svc.Complete(f.ctx, account, a.ID))
	if got := f.get(w.ID); got.Status != turns.Waitlisted {
		t.Fatalf("promoted into a closed run: %s", got.Status)
	}
	wantCode(t, errOf(f.svc.Release(f.ctx, account, w.ID)), turns.CodeQueueClosed)
	// Opening the run again gives the room that was made while it was
	// closed to the waitlist.
	if _, err := f.queues.OpenRun(f.ctx, account, run); err != nil {
		t.Fatal(err)
	}
	if got := f.get(w.ID); got.Status != turns.Waiting {
		t.Fatalf("reopened run: the waitlisted turn is %s, want WAITING", got.Status)
	}

	// A waiting turn of a closed run keeps its place but promises no wait.
	_, other := f.queue(queues.CreateInput{})
	x := f.take(other, turns.CreateInput{})
	if f.get(x.ID).WaitEstimate == nil {
		t.Fatal("an open run estimates the wait")
	}
	if _, err := f.queues.CloseRun(f.ctx, account, other); err != nil {
		t.Fatal(err)
	}
	got := f.get(x.ID)
	if pos(got) != 1 || got.WaitEstimate != nil {
		t.Fatalf("closed run: position %d, estimate %+v; want 1 and none", pos(got), got.WaitEstimate)
	}
}

func TestAnswersShowTheCommittedTurn(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true)}})
	v := f.take(run, turns.CreateInput{})
	steps := []func() (turns.View, error){
		func() (turns.View, error) { return f.svc.Next(f.ctx, account, run, turns.CallInput{}) },
		func() (turns.View, error) { return f.svc.Arrive(f.ctx, account, v.ID) },
		func() (turns.View, error) { return f.svc.Start(f.ctx, account, v.ID) },
		func() (turns.View, error) { return f.svc.Complete(f.ctx, account, v.ID) },
		func() (turns.View, error) { return f.svc.Reopen(f.ctx, account, v.ID) },
		func() (turns.View, error) { return f.svc.Cancel(f.ctx, account, v.ID) },
	}
	for i, step := range steps {
		f.clock.Advance(time.Second)
		got, err := step()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !got.UpdatedAt.Equal(f.clock.Now()) || !got.UpdatedAt.Equal(f.get(v.ID).UpdatedAt) {
			t.Fatalf("step %d answered updatedAt %s; committed %s", i, got.UpdatedAt, f.get(v.ID).UpdatedAt)
		}
	}
}

func TestQueueReadShowsTheReentryRulesEnforced(t *testing.T) {
	f := newFixture(t)
	q, _ := f.queue(queues.CreateInput{})
	tol := q.Tolerance
	if tol.GraceMinutes != nil || tol.AllowReentry == nil || !*tol.AllowReentry || tol.MaxReentries == nil || *tol.MaxReentries != 1 {
		t.Fatalf("tolerance of a queue created without one: %+v", tol)
	}
}
