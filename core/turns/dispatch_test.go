package turns_test

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

func TestLineOrderPositionsAndNext(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{})
	a := f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{})
	c := f.take(run, turns.CreateInput{})
	d := f.take(run, turns.CreateInput{})
	if pos(a) != 1 || pos(b) != 2 || pos(c) != 3 || pos(d) != 4 {
		t.Fatalf("arrival order: %d %d %d %d", pos(a), pos(b), pos(c), pos(d))
	}
	must(t)(f.svc.SetPriority(f.ctx, account, c.ID, turns.PriorityInput{Priority: ptrP(queues.PriorityHigh)}))
	must(t)(f.svc.SetPriority(f.ctx, account, d.ID, turns.PriorityInput{Priority: ptrP(queues.PriorityVeryHigh)}))
	must(t)(f.svc.SetPriority(f.ctx, account, a.ID, turns.PriorityInput{Priority: ptrP(queues.PriorityLow)}))
	must(t)(f.svc.Hold(f.ctx, account, b.ID))
	// VERY_HIGH d, HIGH c, (held b skipped), LOW a.
	if pos(f.get(d.ID)) != 1 || pos(f.get(c.ID)) != 2 || pos(f.get(a.ID)) != 3 || f.get(b.ID).Position != nil {
		t.Fatalf("positions: d%d c%d a%d b%v", pos(f.get(d.ID)), pos(f.get(c.ID)), pos(f.get(a.ID)), f.get(b.ID).Position)
	}
	// Raising a to HIGH puts it before c: same priority, earlier arrival.
	must(t)(f.svc.SetPriority(f.ctx, account, a.ID, turns.PriorityInput{Priority: ptrP(queues.PriorityHigh)}))
	must(t)(f.svc.Release(f.ctx, account, b.ID))
	var order []string
	for range 4 {
		v, err := f.svc.Next(f.ctx, account, run, turns.CallInput{})
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != turns.Called || v.Position != nil || v.WaitEstimate != nil || v.CalledAt == nil {
			t.Fatalf("called: %+v", v)
		}
		order = append(order, v.ID)
	}
	want := []string{d.ID, a.ID, c.ID, b.ID}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("dispatch order: want %v, got %v", want, order)
		}
	}
	_, err := f.svc.Next(f.ctx, account, run, turns.CallInput{})
	wantCode(t, err, turns.CodeNoWaitingTurns)
}

func ptrP(p queues.Priority) *queues.Priority { return &p }

// must returns a function that fails t on an error and returns the view.
func must(t *testing.T) func(turns.View, error) turns.View {
	return func(v turns.View, err error) turns.View {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestWaitEstimate(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{Dispatchers: platform.Ptr(2)})
	a := f.take(run, turns.CreateInput{})
	f.take(run, turns.CreateInput{})
	c := f.take(run, turns.CreateInput{})
	w := c.WaitEstimate
	if w == nil || w.Basis != "default" || w.Servers != 2 || w.Seconds != 3*turns.DefaultServiceSeconds/2 || w.Minutes != 8 {
		t.Fatalf("default estimate: %+v", w)
	}
	// Two services of 60 s and 180 s: average 120 s.
	for _, d := range []time.Duration{60 * time.Second, 180 * time.Second} {
		v := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
		must(t)(f.svc.Start(f.ctx, account, v.ID))
		f.clock.Advance(d)
		must(t)(f.svc.Complete(f.ctx, account, v.ID))
	}
	_ = a
	got := f.get(c.ID)
	if got.WaitEstimate == nil || got.WaitEstimate.Basis != "history" || got.WaitEstimate.AverageServiceSeconds != 120 || pos(got) != 1 || got.WaitEstimate.Seconds != 60 {
		t.Fatalf("estimate from history: pos %d %+v", pos(got), got.WaitEstimate)
	}
	// Stations, when the queue has them, are the servers.
	for range 3 {
		if _, err := f.queues.CreateStation(f.ctx, account, got.QueueID, queues.StationInput{Label: platform.Ptr("Desk")}); err != nil {
			t.Fatal(err)
		}
	}
	if s := f.get(c.ID).WaitEstimate.Servers; s != 3 {
		t.Fatalf("servers: want 3 stations, got %d", s)
	}
}

func TestStations(t *testing.T) {
	f := newFixture(t)
	q, run := f.queue(queues.CreateInput{Stations: []queues.StationInput{{Label: platform.Ptr("Desk 1")}, {Label: platform.Ptr("Desk 2")}}})
	other, _ := f.queue(queues.CreateInput{Stations: []queues.StationInput{{Label: platform.Ptr("Elsewhere")}}})
	s1, s2, foreign := q.Stations[0].ID, q.Stations[1].ID, other.Stations[0].ID
	a := f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{})
	c := f.take(run, turns.CreateInput{})

	_, err := f.svc.Next(f.ctx, account, run, turns.CallInput{StationID: &foreign})
	wantCode(t, err, turns.CodeStationNotInQueue)
	_, err = f.svc.Next(f.ctx, account, run, turns.CallInput{StationID: platform.Ptr("sta_missing")})
	wantCode(t, err, turns.CodeStationNotInQueue)

	v := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{StationID: &s1}))
	if v.ID != a.ID || v.Station == nil || v.Station.ID != s1 || v.Station.Label != "Desk 1" || *v.StationID != s1 {
		t.Fatalf("next to a station: %+v", v)
	}
	// One turn at a time per station.
	_, err = f.svc.Next(f.ctx, account, run, turns.CallInput{StationID: &s1})
	wantCode(t, err, turns.CodeStationBusy)
	_, err = f.svc.Call(f.ctx, account, c.ID, turns.CallInput{StationID: &s1})
	wantCode(t, err, turns.CodeStationBusy)
	if got := f.get(b.ID); got.Status != turns.Waiting || pos(got) != 1 {
		t.Fatalf("a refused next takes nothing: %s %d", got.Status, pos(got))
	}
	// Assigning a waiting turn to a busy station is fine; calling it is not.
	v = must(t)(f.svc.AssignStation(f.ctx, account, c.ID, turns.AssignStationInput{StationID: platform.Patch[string]{Set: true, Value: s1}}))
	if *v.StationID != s1 || v.Status != turns.Waiting {
		t.Fatalf("assign: %+v", v)
	}
	_, err = f.svc.Call(f.ctx, account, c.ID, turns.CallInput{})
	wantCode(t, err, turns.CodeStationBusy)
	// Moving the called turn to a free station frees the first.
	must(t)(f.svc.AssignStation(f.ctx, account, a.ID, turns.AssignStationInput{StationID: platform.Patch[string]{Set: true, Value: s2}}))
	v = must(t)(f.svc.Call(f.ctx, account, c.ID, turns.CallInput{}))
	if v.Status != turns.Called || *v.StationID != s1 {
		t.Fatalf("call to the assigned station: %+v", v)
	}
	_, err = f.svc.AssignStation(f.ctx, account, c.ID, turns.AssignStationInput{StationID: platform.Patch[string]{Set: true, Value: s2}})
	wantCode(t, err, turns.CodeStationBusy)
	_, err = f.svc.AssignStation(f.ctx, account, c.ID, turns.AssignStationInput{StationID: platform.Patch[string]{Set: true, Value: foreign}})
	wantCode(t, err, turns.CodeStationNotInQueue)
	v = must(t)(f.svc.AssignStation(f.ctx, account, c.ID, turns.AssignStationInput{StationID: platform.Patch[string]{Set: true, Null: true}}))
	if v.StationID != nil || v.Station != nil {
		t.Fatalf("null clears: %+v", v)
	}
	_, err = f.svc.AssignStation(f.ctx, account, c.ID, turns.AssignStationInput{})
	if platform.FieldRules(err)["stationId"] != "required" {
		t.Fatalf("stationId is required: %v", err)
	}
	// A finished turn frees its station.
	must(t)(f.svc.Start(f.ctx, account, a.ID))
	must(t)(f.svc.Complete(f.ctx, account, a.ID))
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{StationID: &s2}))
	// Deleting a station unassigns it.
	if _, err := f.queues.DeleteStation(f.ctx, account, s2); err != nil {
		t.Fatal(err)
	}
	if got := f.get(b.ID); got.StationID != nil {
		t.Fatalf("deleted station still assigned: %v", *got.StationID)
	}
}

func TestCallOnNextOffServesAtOnce(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{DispatchFlow: &queues.DispatchFlow{CallOnNext: platform.Ptr(false)},
		Tolerance: &queues.Tolerance{GraceMinutes: platform.Ptr(0)}})
	f.take(run, turns.CreateInput{})
	v := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	if v.Status != turns.InService || v.StartedAt == nil || v.ArrivedAt == nil {
		t.Fatalf("callOnNext off: %+v", v)
	}
	if n := len(f.jobs.All()); n != 0 {
		t.Fatalf("no call, no tolerance job: %d", n)
	}
	if evs := f.eventsOf(v.ID); evs[len(evs)-1].Name != platform.EventName[turns.TurnCalled]() {
		t.Fatalf("the customer is still summoned: %v", evs)
	}
}

func TestTrackServiceOff(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{DispatchFlow: &queues.DispatchFlow{TrackService: platform.Ptr(false)}})
	f.take(run, turns.CreateInput{})
	v := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	_, err := f.svc.Start(f.ctx, account, v.ID)
	wantCode(t, err, turns.CodeServiceNotTracked)
	f.clock.Advance(90 * time.Second)
	v = must(t)(f.svc.Complete(f.ctx, account, v.ID))
	if v.Status != turns.Completed || v.FinishedAt == nil {
		t.Fatalf("complete from CALLED: %+v", v)
	}
	if s, _ := f.repo.RecentServiceSeconds(f.ctx, v.QueueID, 5); len(s) != 1 || s[0] != 90 {
		t.Fatalf("service time from the call: %v", s)
	}

	_, tracked := f.queue(queues.CreateInput{})
	f.take(tracked, turns.CreateInput{})
	v = must(t)(f.svc.Next(f.ctx, account, tracked, turns.CallInput{}))
	e := wantCode(t, errOf(f.svc.Complete(f.ctx, account, v.ID)), turns.CodeInvalidTransition)
	if e.Details["status"] != "CALLED" || e.Details["operation"] != "complete" {
		t.Fatalf("details: %v", e.Details)
	}
}

func errOf(_ turns.View, err error) error { return err }

func TestReopen(t *testing.T) {
	f := newFixture(t)
	_, closed := f.queue(queues.CreateInput{})
	v := f.take(closed, turns.CreateInput{})
	must(t)(f.svc.Cancel(f.ctx, account, v.ID))
	wantCode(t, errOf(f.svc.Reopen(f.ctx, account, v.ID)), turns.CodeReopenNotAllowed)

	_, run := f.queue(queues.CreateInput{DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true)}})
	a := f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{})
	// A cancelled waiting turn comes back to its place in line.
	must(t)(f.svc.Cancel(f.ctx, account, a.ID))
	if pos(f.get(b.ID)) != 1 {
		t.Fatal("b moves up")
	}
	f.clock.Advance(5 * time.Minute)
	got := must(t)(f.svc.Reopen(f.ctx, account, a.ID))
	if got.Status != turns.Waiting || pos(got) != 1 || got.FinishedAt != nil {
		t.Fatalf("reopened cancelled turn: %s %d", got.Status, pos(got))
	}
	if evs := f.eventsOf(a.ID); evs[len(evs)-1].Name != platform.EventName[turns.TurnReopened]() || data(evs[len(evs)-1])["previousStatus"] != "CANCELLED" {
		t.Fatalf("turn.reopened: %+v", evs[len(evs)-1])
	}
	// A completed turn returns to service; not after 5 minutes.
	c := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	must(t)(f.svc.Start(f.ctx, account, c.ID))
	must(t)(f.svc.Complete(f.ctx, account, c.ID))
	got = must(t)(f.svc.Reopen(f.ctx, account, c.ID))
	if got.Status != turns.InService {
		t.Fatalf("reopened completed turn: %s", got.Status)
	}
	must(t)(f.svc.Complete(f.ctx, account, c.ID))
	f.clock.Advance(5*time.Minute + time.Second)
	e := wantCode(t, errOf(f.svc.Reopen(f.ctx, account, c.ID)), turns.CodeReopenWindowExpired)
	if e.Details["status"] != "COMPLETED" {
		t.Fatalf("details: %v", e.Details)
	}
	// A no-show returns to its call.
	d := must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	must(t)(f.svc.NoShow(f.ctx, account, d.ID))
	if got := must(t)(f.svc.Reopen(f.ctx, account, d.ID)); got.Status != turns.Called {
		t.Fatalf("reopened no-show: %s", got.Status)
	}
}

func TestReentry(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{Tolerance: &queues.Tolerance{GraceMinutes: platform.Ptr(2), MaxReentries: platform.Ptr(1)}})
	a := f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{})
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	must(t)(f.svc.NoShow(f.ctx, account, a.ID))
	// The late customer arrives: back in line, behind b.
	got := must(t)(f.svc.Arrive(f.ctx, account, a.ID))
	if got.Status != turns.Waiting || pos(got) != 2 || got.Reentries != 1 || got.ArrivedAt == nil {
		t.Fatalf("re-entry: %s pos %d reentries %d", got.Status, pos(got), got.Reentries)
	}
	if pos(f.get(b.ID)) != 1 {
		t.Fatal("b keeps its place")
	}
	must(t)(f.svc.Call(f.ctx, account, a.ID, turns.CallInput{}))
	must(t)(f.svc.NoShow(f.ctx, account, a.ID))
	e := wantCode(t, errOf(f.svc.Arrive(f.ctx, account, a.ID)), turns.CodeReentryLimitReached)
	if e.Details["status"] != "NO_SHOW" || e.Details["maxReentries"] != 1 {
		t.Fatalf("details: %v", e.Details)
	}

	_, strict := f.queue(queues.CreateInput{Tolerance: &queues.Tolerance{GraceMinutes: platform.Ptr(2), AllowReentry: platform.Ptr(false)}})
	c := f.take(strict, turns.CreateInput{})
	must(t)(f.svc.Next(f.ctx, account, strict, turns.CallInput{}))
	must(t)(f.svc.NoShow(f.ctx, account, c.ID))
	wantCode(t, errOf(f.svc.Arrive(f.ctx, account, c.ID)), turns.CodeReentryNotAllowed)
}

func TestEventsOfTheLifecycle(t *testing.T) {
	f := newFixture(t)
	q, run := f.queue(queues.CreateInput{Stations: []queues.StationInput{{Label: platform.Ptr("Desk")}},
		DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true)}})
	st := q.Stations[0].ID
	a := f.take(run, turns.CreateInput{})
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{StationID: &st}))
	must(t)(f.svc.Arrive(f.ctx, account, a.ID))
	must(t)(f.svc.Start(f.ctx, account, a.ID))
	must(t)(f.svc.Complete(f.ctx, account, a.ID))
	must(t)(f.svc.Reopen(f.ctx, account, a.ID))
	must(t)(f.svc.Cancel(f.ctx, account, a.ID))
	var names []string
	for _, e := range f.eventsOf(a.ID) {
		names = append(names, e.Name)
		for _, k := range []string{"turnId", "queueRunId", "displayCode", "queueId", "status"} {
			if data(e)[k] == nil {
				t.Errorf("%s: data lacks %s: %v", e.Name, k, e.Data)
			}
		}
	}
	// Arrive and start raise no spec event: the internal
	// turn_state.changed, so the screens hear them all the same.
	changed := platform.EventName[turns.TurnStateChanged]()
	want := []string{platform.EventName[turns.TurnCreated](), platform.EventName[turns.TurnCalled](), changed, changed, platform.EventName[turns.TurnCompleted](), platform.EventName[turns.TurnReopened](), platform.EventName[turns.TurnCancelled]()}
	if len(names) != len(want) {
		t.Fatalf("want %v, got %v", want, names)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("want %v, got %v", want, names)
		}
	}
	called := f.eventsOf(a.ID)[1]
	if data(called)["stationId"] == nil || data(called)["status"] != "CALLED" {
		t.Fatalf("turn.called data: %v", called.Data)
	}
}

func TestListFiltersAndArrivals(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{})
	a := f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{})
	c := f.take(run, turns.CreateInput{})
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	must(t)(f.svc.Arrive(f.ctx, account, b.ID))
	must(t)(f.svc.Cancel(f.ctx, account, c.ID))

	list := func(st ...turns.Status) []string {
		p, err := f.svc.List(f.ctx, account, run, turns.ListFilter{Statuses: st}, platform.PageRequest{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, v := range p.Items {
			ids = append(ids, v.ID)
		}
		return ids
	}
	if got := list(); len(got) != 3 {
		t.Fatalf("all: %v", got)
	}
	if got := list(turns.Waiting); len(got) != 1 || got[0] != b.ID {
		t.Fatalf("WAITING: %v", got)
	}
	if got := list(turns.Called, turns.Cancelled); len(got) != 2 || got[0] != a.ID || got[1] != c.ID {
		t.Fatalf("CALLED,CANCELLED: %v", got)
	}
	p, _ := f.svc.List(f.ctx, account, run, turns.ListFilter{}, platform.PageRequest{Limit: 2})
	if len(p.Items) != 2 || p.Next != b.ID {
		t.Fatalf("page: %d next %q", len(p.Items), p.Next)
	}
	p, _ = f.svc.List(f.ctx, account, run, turns.ListFilter{}, platform.PageRequest{Limit: 2, After: p.Next})
	if len(p.Items) != 1 || p.Items[0].ID != c.ID || p.Next != "" {
		t.Fatalf("last page: %+v", p)
	}
	if v := list(turns.Waiting); len(v) == 1 {
		p, _ := f.svc.List(f.ctx, account, run, turns.ListFilter{Statuses: []turns.Status{turns.Waiting}}, platform.PageRequest{Limit: 5})
		if pos(p.Items[0]) != 1 {
			t.Fatal("list items carry their position")
		}
	}
	arr, err := f.svc.Arrivals(f.ctx, account, run, platform.PageRequest{Limit: 50})
	if err != nil || len(arr.Items) != 1 || arr.Items[0].ID != b.ID {
		t.Fatalf("arrivals: %+v %v", arr.Items, err)
	}
	_, err = f.svc.List(f.ctx, "acc_other", run, turns.ListFilter{}, platform.PageRequest{Limit: 5})
	wantCode(t, err, platform.CodeForbidden)

	if _, err := turns.ParseStatuses([]string{"WAITING,CALLED", "WAITING"}); err != nil {
		t.Fatal(err)
	}
	if _, err := turns.ParseStatuses([]string{"waiting"}); platform.FieldRules(err)["status"] != "oneof" {
		t.Fatalf("lowercase status: %v", err)
	}
}

func TestDispatchOnAClosedRun(t *testing.T) {
	f := newFixture(t)
	_, run := f.queue(queues.CreateInput{})
	a := f.take(run, turns.CreateInput{})
	b := f.take(run, turns.CreateInput{})
	must(t)(f.svc.Next(f.ctx, account, run, turns.CallInput{}))
	if _, err := f.queues.CloseRun(f.ctx, account, run); err != nil {
		t.Fatal(err)
	}
	wantCode(t, errOf(f.svc.Next(f.ctx, account, run, turns.CallInput{})), turns.CodeQueueClosed)
	wantCode(t, errOf(f.svc.Call(f.ctx, account, b.ID, turns.CallInput{})), turns.CodeQueueClosed)
	// What is under way can finish.
	must(t)(f.svc.Start(f.ctx, account, a.ID))
	must(t)(f.svc.Complete(f.ctx, account, a.ID))
	must(t)(f.svc.Cancel(f.ctx, account, b.ID))
}
