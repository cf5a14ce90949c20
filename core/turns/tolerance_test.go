package turns_test

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// calledTurn makes a queue with the tolerance and onToleranceExpired given,
// takes a turn and calls it; it returns the turn and the job the call
// scheduled.
func calledTurn(t *testing.T, f *fixture, grace int, onExpired string) (turns.View, turns.ToleranceArgs) {
	t.Helper()
	_, run := f.queue(queues.CreateInput{
		Tolerance:    &queues.Tolerance{GraceMinutes: platform.Ptr(grace)},
		DispatchFlow: &queues.DispatchFlow{OnToleranceExpired: platform.Ptr(onExpired)},
	})
	f.take(run, turns.CreateInput{})
	before := len(f.jobs.All())
	v := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	jobs := f.jobs.All()
	if len(jobs) != before+1 {
		t.Fatalf("a call schedules one job, got %d", len(jobs)-before)
	}
	j := jobs[len(jobs)-1]
	args, ok := j.Args.(turns.ToleranceArgs)
	if !ok || j.Kind != turns.ToleranceJobKind || args.TurnID != v.ID || args.CallCount != 1 {
		t.Fatalf("job: %+v", j)
	}
	if want := v.CalledAt.Add(time.Duration(grace) * time.Minute); !j.RunAt.Equal(want) {
		t.Fatalf("job runs at %v, want call time + grace %v", j.RunAt, want)
	}
	return v, args
}

func TestToleranceExpiryOutcomes(t *testing.T) {
	cases := []struct {
		onExpired string
		want      turns.Status
		event     string
	}{
		{queues.OnExpiredNoShow, turns.NoShow, turns.EventStateChanged},
		{queues.OnExpiredCancel, turns.Cancelled, platform.EventName[turns.TurnCancelled]()},
		{queues.OnExpiredHold, turns.Held, turns.EventStateChanged},
		{queues.OnExpiredNone, turns.Called, ""},
	}
	for _, c := range cases {
		t.Run(c.onExpired, func(t *testing.T) {
			f := newFixture(t)
			v, args := calledTurn(t, f, 3, c.onExpired)
			events := len(f.eventsOf(v.ID))
			for range 2 { // running the job twice changes nothing more
				if err := f.svc.ExpireTolerance(f.ctx, args); err != nil {
					t.Fatal(err)
				}
			}
			got := f.get(v.ID)
			if got.Status != c.want {
				t.Fatalf("want %s, got %s", c.want, got.Status)
			}
			evs := f.eventsOf(v.ID)
			if c.event == "" && len(evs) != events || c.event != "" && (len(evs) != events+1 || evs[len(evs)-1].Name != c.event) {
				t.Fatalf("events: %d before, after %+v", events, evs)
			}
			if c.event == platform.EventName[turns.TurnCancelled]() && data(evs[len(evs)-1])["reason"] != "tolerance_expired" {
				t.Fatalf("reason: %v", evs[len(evs)-1].Data)
			}
		})
	}
}

func TestToleranceLeavesATurnThatMovedOn(t *testing.T) {
	f := newFixture(t)
	moves := map[string]func(id string){
		"arrived":   func(id string) { must(t)(f.svc.Arrive(f.ctx, account, id)) },
		"started":   func(id string) { must(t)(f.svc.Start(f.ctx, account, id)) },
		"cancelled": func(id string) { must(t)(f.svc.Cancel(f.ctx, account, id)) },
		"held":      func(id string) { must(t)(f.svc.Hold(f.ctx, account, id)) },
	}
	for name, move := range moves {
		v, args := calledTurn(t, f, 1, queues.OnExpiredNoShow)
		move(v.ID)
		before := f.get(v.ID)
		if err := f.svc.ExpireTolerance(f.ctx, args); err != nil {
			t.Fatal(err)
		}
		if after := f.get(v.ID); after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("%s: the job changed %s to %s", name, before.Status, after.Status)
		}
	}
	if err := f.svc.ExpireTolerance(f.ctx, turns.ToleranceArgs{TurnID: "turn_gone", CallCount: 1}); err != nil {
		t.Fatalf("a deleted turn is nothing to do: %v", err)
	}
}

func TestCallingAgainStartsANewTolerance(t *testing.T) {
	f := newFixture(t)
	v, first := calledTurn(t, f, 2, queues.OnExpiredNoShow)
	f.clock.Advance(time.Minute)
	again := must(t)(f.svc.Call(f.ctx, account, v.ID, turns.CallInput{}))
	jobs := f.jobs.All()
	second := jobs[len(jobs)-1].Args.(turns.ToleranceArgs)
	if again.CallCount != 2 || second.CallCount != 2 || !jobs[len(jobs)-1].RunAt.Equal(again.CalledAt.Add(2*time.Minute)) {
		t.Fatalf("recall: %d %+v", again.CallCount, jobs[len(jobs)-1])
	}
	if err := f.svc.ExpireTolerance(f.ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := f.get(v.ID); got.Status != turns.Called {
		t.Fatalf("the first call's job acted on the second call: %s", got.Status)
	}
	if err := f.svc.ExpireTolerance(f.ctx, second); err != nil {
		t.Fatal(err)
	}
	if got := f.get(v.ID); got.Status != turns.NoShow {
		t.Fatalf("the second call's job: %s", got.Status)
	}
}

func TestNoToleranceNoJob(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{})
	f.take(run, turns.CreateInput{})
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	if n := len(f.jobs.All()); n != 0 {
		t.Fatalf("a queue without tolerance schedules no expiry: %d", n)
	}
}

func TestARefusedCallSchedulesNothing(t *testing.T) {
	f := newFixture(t)
	q, run := f.queue(queues.CreateInput{Tolerance: &queues.Tolerance{GraceMinutes: platform.Ptr(0)},
		Stations: []queues.StationInput{{Label: platform.Ptr("Desk")}}})
	st := q.Stations[0].ID
	f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{})
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{StationID: &st}))
	n := len(f.jobs.All())
	wantCode(t, errOf(f.svc.Call(f.ctx, account, b.ID, turns.CallInput{StationID: &st})), turns.CodeStationBusy)
	if len(f.jobs.All()) != n {
		t.Fatal("a rolled-back call left a job")
	}
}

func TestHeldByExpiryReleaseIsAReentry(t *testing.T) {
	f := newFixture(t)
	v, args := calledTurn(t, f, 0, queues.OnExpiredHold)
	other := f.take(v.RunID, turns.CreateInput{})
	if err := f.svc.ExpireTolerance(f.ctx, args); err != nil {
		t.Fatal(err)
	}
	got := must(t)(f.svc.Release(f.ctx, account, v.ID))
	if got.Status != turns.Waiting || got.Reentries != 1 || pos(got) != 2 || pos(f.get(other.ID)) != 1 {
		t.Fatalf("release after expiry: %s reentries %d pos %d", got.Status, got.Reentries, pos(got))
	}
	args2 := args
	must(t)(f.svc.Call(f.ctx, account, v.ID, turns.CallInput{}))
	args2.CallCount = 2
	if err := f.svc.ExpireTolerance(f.ctx, args2); err != nil {
		t.Fatal(err)
	}
	wantCode(t, errOf(f.svc.Release(f.ctx, account, v.ID)), turns.CodeReentryLimitReached)
	// A hold by staff is not a missed call: release puts the turn back in
	// its place, as often as needed.
	w := f.take(v.RunID, turns.CreateInput{})
	for range 3 {
		must(t)(f.svc.Hold(f.ctx, account, other.ID))
		if got := must(t)(f.svc.Release(f.ctx, account, other.ID)); pos(got) != 1 || got.Reentries != 0 {
			t.Fatalf("staff hold and release: pos %d reentries %d", pos(got), got.Reentries)
		}
	}
	_ = w
}
