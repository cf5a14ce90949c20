package appointments_test

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/testkit"
)

// hybrid is a HYBRID queue with the turns and appointments services
// wired as modules/appointments wires them.
type hybrid struct {
	apts  *appointments.Service
	qs    *queues.Service
	turns *turns.Service
	jobs  *testkit.Jobs
	clock *platformtest.Clock
	run   string
	slot  appointments.Slot
}

func newHybrid(t *testing.T) *hybrid {
	t.Helper()
	clock := platformtest.NewClock(time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	bus := events.NewBus(set.Events)
	ents := entities.NewService(set.Entities, store, clock)
	qrepo := set.Queues
	qs := queues.NewService(qrepo, ents, store, bus, clock)
	js := testkit.NewJobs(store)
	ts := turns.NewService(set.Turns, qrepo, store, bus, js, clock,
		turns.Hooks{Followers: []turns.Follower{appointments.NewTurnFollower(set.Appointments, bus, clock)}})
	as := appointments.NewService(set.Appointments, qrepo, store, bus, clock, ts, js)
	bus.Subscribe(ts)
	bus.Subscribe(as)
	e, err := ents.Create(ctx, account, entities.CreateInput{Name: platform.Ptr("Clinic")})
	if err != nil {
		t.Fatal(err)
	}
	q, err := qs.Create(ctx, account, queues.CreateInput{EntityID: &e.ID, Name: platform.Ptr("Mixed"), Type: platform.Ptr(queues.TypeHybrid)})
	if err != nil {
		t.Fatal(err)
	}
	h := &hybrid{apts: as, qs: qs, turns: ts, jobs: js, clock: clock, run: q.Runs[0].ID}
	b, err := as.GenerateSlots(ctx, account, h.run, gen("2026-03-07", "13:00", "14:00", 30, 5))
	if err != nil {
		t.Fatal(err)
	}
	h.slot = b.Slots[0]
	return h
}

func (h *hybrid) book(t *testing.T) appointments.Appointment {
	t.Helper()
	a, err := h.apts.Schedule(ctx, account, h.run, appointments.ScheduleInput{SlotID: &h.slot.ID})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (h *hybrid) walkIn(t *testing.T) turns.View {
	t.Helper()
	v, _, err := h.turns.Create(ctx, account, h.run, turns.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestEarlyCheckInJoinsTheLineAtTheSlotsStart: checked in before its slot,
// an appointment is not in the line; it joins at the slot's start (the
// job), behind walk-ins who came before that and ahead of later ones.
func TestEarlyCheckInJoinsTheLineAtTheSlotsStart(t *testing.T) {
	h := newHybrid(t)
	a := h.book(t)
	h.clock.Set(time.Date(2026, 3, 7, 12, 50, 0, 0, time.UTC))
	got, err := h.apts.CheckIn(ctx, account, a.ID)
	if err != nil || got.TurnID != nil || got.Status != appointments.StatusCheckedIn {
		t.Fatalf("early check-in: %+v %v", got, err)
	}
	before := h.walkIn(t) // 12:55, before the slot starts
	if len(h.jobs.All()) != 1 || h.jobs.All()[0].Kind != appointments.JoinLineJobKind || !h.jobs.All()[0].RunAt.Equal(h.slot.Start) {
		t.Fatalf("the join job: %+v", h.jobs.All())
	}
	h.clock.Set(h.slot.Start)
	args := h.jobs.All()[0].Args.(appointments.JoinLineArgs)
	if err := h.apts.JoinLine(ctx, args); err != nil {
		t.Fatal(err)
	}
	if err := h.apts.JoinLine(ctx, args); err != nil { // a second run changes nothing
		t.Fatal(err)
	}
	after := h.walkIn(t)
	a, _ = h.apts.Get(ctx, account, a.ID)
	if a.TurnID == nil {
		t.Fatal("joined at the slot's start")
	}
	for want, id := range []string{before.ID, *a.TurnID, after.ID} {
		v, err := h.turns.Get(ctx, account, id)
		if err != nil || v.Position == nil || *v.Position != want+1 {
			t.Fatalf("position of %s: %v %v, want %d", id, v.Position, err, want+1)
		}
	}
}

// TestTheAppointmentFollowsItsTurn: no-show, re-entry, cancel and reopen
// of the turn keep the appointment in step; a cancelled appointment's turn
// cannot come back.
func TestTheAppointmentFollowsItsTurn(t *testing.T) {
	h := newHybrid(t)
	a := h.book(t)
	h.clock.Set(h.slot.Start.Add(time.Minute))
	a, err := h.apts.CheckIn(ctx, account, a.ID)
	if err != nil || a.TurnID == nil {
		t.Fatalf("check-in after the slot started: %+v %v", a, err)
	}
	tid := *a.TurnID
	status := func() appointments.Status {
		got, _ := h.apts.Get(ctx, account, a.ID)
		return got.Status
	}
	if _, err := h.turns.Call(ctx, account, tid, turns.CallInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.turns.NoShow(ctx, account, tid); err != nil || status() != appointments.StatusNoShow {
		t.Fatalf("no-show: %s %v", status(), err)
	}
	if _, err := h.turns.Arrive(ctx, account, tid); err != nil || status() != appointments.StatusCheckedIn {
		t.Fatalf("the late customer re-enters: %s %v", status(), err)
	}
	_, err = h.apts.NoShow(ctx, account, a.ID)
	wantCode(t, err, appointments.CodeInLine, platform.KindConflict)
	if _, err := h.turns.Cancel(ctx, account, tid); err != nil || status() != appointments.StatusCancelled {
		t.Fatalf("the turn cancelled: %s %v", status(), err)
	}
}

// TestAClosedRunNeverStrandsACheckedInAppointment (issue 23): a closed run
// refuses the check-in, early or late; an appointment checked in early
// whose run is closed over its slot's start is not lost: the join job
// finishes without error (nothing to retry), the appointment stays
// waiting to join (joinsLineAt past, turnId null), and it joins the line
// when the run opens again, ahead of walk-ins who come after.
func TestAClosedRunNeverStrandsACheckedInAppointment(t *testing.T) {
	h := newHybrid(t)
	a, late := h.book(t), h.book(t)
	h.clock.Set(time.Date(2026, 3, 7, 12, 40, 0, 0, time.UTC))
	if _, err := h.qs.CloseRun(ctx, account, h.run); err != nil {
		t.Fatal(err)
	}
	_, err := h.apts.CheckIn(ctx, account, a.ID)
	wantCode(t, err, turns.CodeQueueClosed, platform.KindConflict)
	if len(h.jobs.All()) != 0 {
		t.Fatalf("a refused check-in scheduled %+v", h.jobs.All())
	}

	// Checked in early on an open run, then the run closes over the
	// slot's start (a lunch break).
	if _, err := h.qs.OpenRun(ctx, account, h.run); err != nil {
		t.Fatal(err)
	}
	h.clock.Set(time.Date(2026, 3, 7, 12, 50, 0, 0, time.UTC))
	got, err := h.apts.CheckIn(ctx, account, a.ID)
	if err != nil || got.TurnID != nil || got.JoinsLineAt == nil || !got.JoinsLineAt.Equal(h.slot.Start) {
		t.Fatalf("early check-in: %+v %v", got, err)
	}
	h.clock.Set(time.Date(2026, 3, 7, 12, 55, 0, 0, time.UTC))
	if _, err := h.qs.CloseRun(ctx, account, h.run); err != nil {
		t.Fatal(err)
	}
	h.clock.Set(h.slot.Start)
	args := h.jobs.All()[0].Args.(appointments.JoinLineArgs)
	if err := h.apts.JoinLine(ctx, args); err != nil {
		t.Fatalf("the join job on a closed run must not fail (it would be retried, then discarded): %v", err)
	}
	got, _ = h.apts.Get(ctx, account, a.ID)
	if got.Status != appointments.StatusCheckedIn || got.TurnID != nil || got.JoinsLineAt == nil || got.JoinsLineAt.After(h.clock.Now()) {
		t.Fatalf("waiting to join: %+v", got)
	}
	// Late, on the closed run: refused too.
	h.clock.Set(h.slot.Start.Add(5 * time.Minute))
	_, err = h.apts.CheckIn(ctx, account, late.ID)
	wantCode(t, err, turns.CodeQueueClosed, platform.KindConflict)

	// The run opens again: the appointment joins, first in line.
	h.clock.Set(h.slot.Start.Add(10 * time.Minute))
	if _, err := h.qs.OpenRun(ctx, account, h.run); err != nil {
		t.Fatal(err)
	}
	got, _ = h.apts.Get(ctx, account, a.ID)
	if got.TurnID == nil || got.JoinsLineAt != nil || got.Status != appointments.StatusCheckedIn {
		t.Fatalf("after the run opened: %+v", got)
	}
	walkIn := h.walkIn(t)
	for want, id := range []string{*got.TurnID, walkIn.ID} {
		v, err := h.turns.Get(ctx, account, id)
		if err != nil || v.Position == nil || *v.Position != want+1 {
			t.Fatalf("position of %s: %v %v, want %d", id, v.Position, err, want+1)
		}
	}
	// A late job run changes nothing.
	if err := h.apts.JoinLine(ctx, args); err != nil {
		t.Fatal(err)
	}
}

// TestTheSweepJoinsAppointmentsLeftWaitingOnAnOpenRun: when the join job
// of an appointment checked in early never ran to its end (it gave up,
// the database away through its attempts), the periodic sweep (JoinDue)
// puts it in the line, once; on a closed run it leaves it waiting for the
// opening.
func TestTheSweepJoinsAppointmentsLeftWaitingOnAnOpenRun(t *testing.T) {
	h := newHybrid(t)
	a, b := h.book(t), h.book(t)
	h.clock.Set(time.Date(2026, 3, 7, 12, 50, 0, 0, time.UTC))
	if _, err := h.apts.CheckIn(ctx, account, a.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := h.apts.JoinDue(ctx); err != nil || n != 0 {
		t.Fatalf("before the slot's start the sweep joined %d: %v", n, err)
	}
	h.clock.Set(h.slot.Start.Add(2 * time.Minute)) // the join job gave up
	if _, err := h.qs.CloseRun(ctx, account, h.run); err != nil {
		t.Fatal(err)
	}
	if n, err := h.apts.JoinDue(ctx); err != nil || n != 0 {
		t.Fatalf("on a closed run the sweep joined %d: %v", n, err)
	}
	// The opening joins it (OnEvent), not the sweep.
	h.clock.Set(h.slot.Start.Add(3 * time.Minute))
	if _, err := h.qs.OpenRun(ctx, account, h.run); err != nil {
		t.Fatal(err)
	}
	got, _ := h.apts.Get(ctx, account, a.ID)
	if got.TurnID == nil {
		t.Fatal("the opening joined it")
	}
	// A second appointment, checked in early on the open run, whose join
	// job never ran to its end: left waiting on an open run.
	h.clock.Set(time.Date(2026, 3, 7, 12, 55, 0, 0, time.UTC))
	if _, err := h.apts.CheckIn(ctx, account, b.ID); err != nil {
		t.Fatal(err)
	}
	h.clock.Set(h.slot.Start.Add(5 * time.Minute))
	if n, err := h.apts.JoinDue(ctx); err != nil || n != 1 {
		t.Fatalf("the sweep joined %d, want 1: %v", n, err)
	}
	if n, err := h.apts.JoinDue(ctx); err != nil || n != 0 {
		t.Fatalf("a second sweep joined %d: %v", n, err)
	}
	got, _ = h.apts.Get(ctx, account, b.ID)
	if got.TurnID == nil || got.JoinsLineAt != nil {
		t.Fatalf("after the sweep: %+v", got)
	}
}
