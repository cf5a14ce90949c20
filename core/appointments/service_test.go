package appointments_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/location"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/test/testkit"
)

const account = "acc_1"

var ctx = context.Background()

type fixture struct {
	svc      *appointments.Service
	queues   *queues.Service
	entities *entities.Service
	events   *memory.Events
	clock    *platformtest.Clock
	sink     *failingSink
	entity   string
}

// failingSink is the event bus, made to fail on demand to prove that a
// failed event rolls the whole booking back.
type failingSink struct {
	bus  *events.Bus
	mu   sync.Mutex
	fail bool
}

func (s *failingSink) Emit(ctx context.Context, e platform.Event) error {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return errors.New("event log unavailable")
	}
	return s.bus.Emit(ctx, e)
}

// newFixture stands the clock on Saturday 2026-03-07 12:00 UTC, the eve of
// New York's spring-forward day.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := platformtest.NewClock(time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	ev := set.Events.(*memory.Events)
	bus := events.NewBus(ev)
	ents := entities.NewService(set.Entities, store, clock)
	qrepo := set.Queues
	qs := queues.NewService(qrepo, ents, store, bus, clock)
	sink := &failingSink{bus: bus}
	svc := appointments.NewService(set.Appointments, qrepo, store, sink, clock, nil, nil)
	e, err := ents.Create(ctx, account, entities.CreateInput{Name: platform.Ptr("Main branch")})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, queues: qs, entities: ents, events: ev, clock: clock, sink: sink, entity: e.ID}
}

// queue creates a queue of the type in the time zone ("" for none) and
// returns its open run.
func (f *fixture) queue(t *testing.T, typ, tz string, mod ...func(*queues.CreateInput)) queues.QueueView {
	t.Helper()
	in := queues.CreateInput{EntityID: &f.entity, Name: platform.Ptr("Clinic"), Type: &typ}
	if tz != "" {
		in.Location = &location.Location{Lat: platform.Ptr(40.7), Lng: platform.Ptr(-74.0), ShortAddress: platform.Ptr("5th Ave"), Timezone: &tz}
	}
	for _, m := range mod {
		m(&in)
	}
	q, err := f.queues.Create(ctx, account, in)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func gen(date, start, end string, minutes, capacity int) appointments.GenerateInput {
	return appointments.GenerateInput{Date: &date, StartTime: &start, EndTime: &end, SlotMinutes: &minutes, Capacity: &capacity}
}

func (f *fixture) slots(t *testing.T, runID string, in appointments.GenerateInput) []appointments.Slot {
	t.Helper()
	b, err := f.svc.GenerateSlots(ctx, account, runID, in)
	if err != nil {
		t.Fatal(err)
	}
	return b.Slots
}

func wantCode(t *testing.T, err error, code string, kind platform.Kind) *platform.Error {
	t.Helper()
	e, ok := platform.AsError(err)
	if !ok || e.Code != code || e.Kind != kind {
		t.Fatalf("want %s (kind %d), got %v", code, kind, err)
	}
	return e
}

func (f *fixture) eventsNamed(t *testing.T, name string) []platform.Event {
	t.Helper()
	all, err := f.events.List(ctx, account, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []platform.Event
	for _, e := range all {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func TestGenerateSlotsInTheQueuesTimezoneAcrossTheDSTChange(t *testing.T) {
	f := newFixture(t)
	run := f.queue(t, queues.TypeAppointment, "America/New_York").Runs[0]
	b, err := f.svc.GenerateSlots(ctx, account, run.ID, gen("2026-03-08", "00:00", "05:00", 60, 3))
	if err != nil {
		t.Fatal(err)
	}
	if b.Timezone != "America/New_York" || b.Date != "2026-03-08" || len(b.Slots) != 4 {
		t.Fatalf("batch %+v", b)
	}
	want := []string{"2026-03-08T05:00:00Z", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}
	for i, s := range b.Slots {
		if s.Start.Format(time.RFC3339) != want[i] || s.End.Sub(s.Start) != time.Hour || s.Capacity != 3 || s.Remaining != 3 ||
			s.RunID != run.ID || s.Date != "2026-03-08" {
			t.Fatalf("slot %d: %+v", i, s)
		}
	}
	// Without a location timezone the queue's day is a UTC day.
	utcRun := f.queue(t, queues.TypeHybrid, "").Runs[0]
	ub, err := f.svc.GenerateSlots(ctx, account, utcRun.ID, gen("2026-03-08", "09:00", "10:00", 30, 1))
	if err != nil || ub.Timezone != "UTC" || ub.Slots[0].Start.Format(time.RFC3339) != "2026-03-08T09:00:00Z" {
		t.Fatalf("utc batch %+v %v", ub, err)
	}
}

func TestGenerateSlotsRefusals(t *testing.T) {
	f := newFixture(t)
	run := f.queue(t, queues.TypeAppointment, "America/New_York").Runs[0]
	f.slots(t, run.ID, gen("2026-03-09", "09:00", "12:00", 30, 2))

	t.Run("an overlap is refused whole, naming the slot it meets", func(t *testing.T) {
		for _, in := range []appointments.GenerateInput{
			gen("2026-03-09", "09:00", "12:00", 30, 2), // the same again: no doubled capacity
			gen("2026-03-09", "11:45", "13:00", 15, 2), // partial
			gen("2026-03-09", "08:00", "09:10", 10, 2), // reaching into the first slot
			gen("2026-03-09", "10:10", "10:20", 10, 2), // inside one slot
		} {
			_, err := f.svc.GenerateSlots(ctx, account, run.ID, in)
			e := wantCode(t, err, appointments.CodeSlotOverlap, platform.KindConflict)
			if e.Details["slotId"] == nil {
				t.Fatalf("details %v", e.Details)
			}
		}
		page, _ := f.svc.ListSlots(ctx, account, run.ID, appointments.SlotFilter{}, platform.PageRequest{Limit: 100})
		if len(page.Items) != 6 {
			t.Fatalf("the run has %d slots after refusals, want 6", len(page.Items))
		}
	})
	t.Run("adjacent windows are not overlaps", func(t *testing.T) {
		f.slots(t, run.ID, gen("2026-03-09", "12:00", "13:00", 60, 2))
		f.slots(t, run.ID, gen("2026-03-09", "08:00", "09:00", 20, 2))
	})
	t.Run("a TURN queue takes no slots", func(t *testing.T) {
		turn := f.queue(t, queues.TypeTurn, "").Runs[0]
		_, err := f.svc.GenerateSlots(ctx, account, turn.ID, gen("2026-03-09", "09:00", "10:00", 30, 1))
		e := wantCode(t, err, appointments.CodeQueueTypeMismatch, platform.KindConflict)
		if e.Details["queueType"] != queues.TypeTurn {
			t.Fatalf("details %v", e.Details)
		}
	})
	t.Run("a day already over in the queue's zone", func(t *testing.T) {
		// 12:00 UTC on the 7th is 07:00 on the 7th in New York: the 6th is over,
		// the 7th is today and allowed.
		_, err := f.svc.GenerateSlots(ctx, account, run.ID, gen("2026-03-06", "09:00", "10:00", 30, 1))
		wantCode(t, err, appointments.CodeSlotDateInPast, platform.KindUnprocessable)
		f.slots(t, run.ID, gen("2026-03-07", "09:00", "10:00", 30, 1))
	})
	t.Run("a window the DST jump swallows", func(t *testing.T) {
		_, err := f.svc.GenerateSlots(ctx, account, run.ID, gen("2026-03-08", "02:00", "03:00", 60, 1))
		wantCode(t, err, platform.CodeValidation, platform.KindInvalid)
	})
	t.Run("another account's run", func(t *testing.T) {
		_, err := f.svc.GenerateSlots(ctx, "acc_other", run.ID, gen("2026-03-10", "09:00", "10:00", 30, 1))
		wantCode(t, err, platform.CodeForbidden, platform.KindForbidden)
		_, err = f.svc.GenerateSlots(ctx, account, "run_missing", gen("2026-03-10", "09:00", "10:00", 30, 1))
		wantCode(t, err, platform.CodeNotFound, platform.KindNotFound)
	})
}

func TestListSlotsAvailableKeepsBookableSlots(t *testing.T) {
	f := newFixture(t)
	run := f.queue(t, queues.TypeAppointment, "").Runs[0]
	today := f.slots(t, run.ID, gen("2026-03-07", "11:00", "14:00", 60, 1)) // 11:00 started, 12:00 starts now, 13:00 open
	tomorrow := f.slots(t, run.ID, gen("2026-03-08", "09:00", "11:00", 60, 1))
	if _, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &tomorrow[0].ID}); err != nil {
		t.Fatal(err)
	}
	ids := func(flt appointments.SlotFilter, limit int) []string {
		var out []string
		page := platform.PageRequest{Limit: limit}
		for {
			p, err := f.svc.ListSlots(ctx, account, run.ID, flt, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Items {
				out = append(out, s.ID)
			}
			if p.Next == "" {
				return out
			}
			page.After = p.Next
		}
	}
	all := ids(appointments.SlotFilter{}, 2)
	if fmt.Sprint(all) != fmt.Sprint([]string{today[0].ID, today[1].ID, today[2].ID, tomorrow[0].ID, tomorrow[1].ID}) {
		t.Fatalf("all slots, paged by 2: %v", all)
	}
	if got := ids(appointments.SlotFilter{Available: true}, 50); fmt.Sprint(got) != fmt.Sprint([]string{today[2].ID, tomorrow[1].ID}) {
		t.Fatalf("available: %v", got)
	}
	if got := ids(appointments.SlotFilter{Available: true, Date: "2026-03-08"}, 50); fmt.Sprint(got) != fmt.Sprint([]string{tomorrow[1].ID}) {
		t.Fatalf("available on the 8th: %v", got)
	}
	if _, err := f.svc.ListSlots(ctx, account, run.ID, appointments.SlotFilter{Date: "8 March"}, platform.PageRequest{Limit: 5}); !platform.IsCode(err, platform.CodeValidation) {
		t.Fatalf("bad date: %v", err)
	}
}

func TestScheduleIntoASlotAndIntoTheNextAvailable(t *testing.T) {
	f := newFixture(t)
	run := f.queue(t, queues.TypeAppointment, "America/New_York").Runs[0]
	s := f.slots(t, run.ID, gen("2026-03-09", "09:00", "10:00", 20, 2))

	a, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s[1].ID, CustomerName: platform.Ptr("Ada"), Phone: platform.Ptr("+1 555-0100")})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != appointments.StatusScheduled || a.SlotID != s[1].ID || !a.SlotStart.Equal(s[1].Start) || a.RunID != run.ID ||
		*a.CustomerName != "Ada" || a.Date != "2026-03-09" || a.FormResponse == nil {
		t.Fatalf("appointment %+v", a)
	}
	// Next available fills the earliest slot first, then moves on.
	var got []string
	for i := 0; i < 4; i++ {
		n, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n.SlotID)
	}
	if want := []string{s[0].ID, s[0].ID, s[1].ID, s[2].ID}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("next available went to %v, want %v", got, want)
	}
	// One seat left, in the last slot; then none.
	if _, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s[0].ID}); err == nil {
		t.Fatal("booked a full slot")
	} else {
		e := wantCode(t, err, appointments.CodeSlotFull, platform.KindConflict)
		if e.Details["slotId"] != s[0].ID {
			t.Fatalf("details %v", e.Details)
		}
	}
	if _, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{})
	wantCode(t, err, appointments.CodeNoSlotAvailable, platform.KindConflict)

	sch := f.eventsNamed(t, platform.EventName[appointments.AppointmentScheduled]())
	if len(sch) != 6 {
		t.Fatalf("%d appointment.scheduled events, want 6", len(sch))
	}
	var d appointments.AppointmentScheduled
	if err := sch[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.AppointmentID != a.ID || d.QueueRunID != run.ID || d.SlotID != s[1].ID || d.SlotStart != "2026-03-09T13:20:00Z" ||
		sch[0].RunID != run.ID || sch[0].QueueID != a.QueueID {
		t.Fatalf("event %+v", sch[0])
	}
}

func TestScheduleRefusals(t *testing.T) {
	f := newFixture(t)
	q := f.queue(t, queues.TypeHybrid, "", func(in *queues.CreateInput) {
		in.PreAttention = &queues.PreAttention{Questions: []queues.Question{
			{ID: platform.Ptr("reason"), Label: platform.Ptr("Reason"), Type: platform.Ptr(queues.QuestionChoice), Required: platform.Ptr(true),
				Options: []queues.Option{{Label: platform.Ptr("Checkup"), Bare: true}, {Label: platform.Ptr("Vaccine"), Bare: true}}},
			{ID: platform.Ptr("notes"), Label: platform.Ptr("Anything else?")},
		}}
	})
	run := q.Runs[0]
	s := f.slots(t, run.ID, gen("2026-03-07", "12:00", "14:00", 60, 5)) // 12:00 starts now, 13:00 is ahead
	form := map[string]string{"reason": "Checkup"}

	t.Run("a slot that has started", func(t *testing.T) {
		_, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s[0].ID, FormResponse: form})
		wantCode(t, err, appointments.CodeSlotStarted, platform.KindUnprocessable)
	})
	t.Run("next available skips the started slot", func(t *testing.T) {
		a, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{FormResponse: form})
		if err != nil || a.SlotID != s[1].ID {
			t.Fatalf("%+v %v", a, err)
		}
	})
	t.Run("the answers are checked against the queue's questions", func(t *testing.T) {
		_, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s[1].ID,
			FormResponse: map[string]string{"reason": "Surgery", "colour": "blue"}})
		e := wantCode(t, err, platform.CodeValidation, platform.KindInvalid)
		got := map[string]string{}
		for _, fe := range platform.FieldErrors(e) {
			got[fe.Path] = fe.Rule
		}
		if got["formResponse.reason"] != "oneof" || got["formResponse.colour"] != "unknown_question" || len(got) != 2 {
			t.Fatalf("fields %v", got)
		}
		_, err = f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s[1].ID})
		e = wantCode(t, err, platform.CodeValidation, platform.KindInvalid)
		if fe := platform.FieldErrors(e); fe[0].Path != "formResponse.reason" || fe[0].Rule != "required" {
			t.Fatalf("fields %v", fe)
		}
	})
	t.Run("body bounds", func(t *testing.T) {
		_, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{
			SlotID: platform.Ptr(""), IdempotencyKey: platform.Ptr("short"), CustomerName: platform.Ptr(""),
			Phone: platform.Ptr("phone-no"), Notes: platform.Ptr(string(make([]byte, 501)))})
		e := wantCode(t, err, platform.CodeValidation, platform.KindInvalid)
		got := map[string]bool{}
		for _, fe := range platform.FieldErrors(e) {
			got[fe.Path] = true
		}
		for _, p := range []string{"slotId", "idempotencyKey", "customerName", "phone", "notes"} {
			if !got[p] {
				t.Fatalf("%s not reported: %v", p, got)
			}
		}
	})
	t.Run("a slot of another run", func(t *testing.T) {
		other := f.queue(t, queues.TypeAppointment, "").Runs[0]
		os := f.slots(t, other.ID, gen("2026-03-08", "09:00", "10:00", 60, 1))
		_, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &os[0].ID, FormResponse: form})
		wantCode(t, err, appointments.CodeSlotNotFound, platform.KindUnprocessable)
		_, err = f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: platform.Ptr("slot_nope"), FormResponse: form})
		wantCode(t, err, appointments.CodeSlotNotFound, platform.KindUnprocessable)
	})
	t.Run("a TURN queue", func(t *testing.T) {
		turn := f.queue(t, queues.TypeTurn, "").Runs[0]
		_, err := f.svc.Schedule(ctx, account, turn.ID, appointments.ScheduleInput{})
		wantCode(t, err, appointments.CodeQueueTypeMismatch, platform.KindConflict)
	})
	t.Run("a closed run", func(t *testing.T) {
		if _, err := f.queues.CloseRun(ctx, account, run.ID); err != nil {
			t.Fatal(err)
		}
		defer f.queues.OpenRun(ctx, account, run.ID)
		_, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{FormResponse: form})
		wantCode(t, err, queues.CodeRunClosed, platform.KindConflict)
	})
	t.Run("a failed event takes nothing", func(t *testing.T) {
		before, _ := f.svc.ListSlots(ctx, account, run.ID, appointments.SlotFilter{}, platform.PageRequest{Limit: 10})
		f.sink.mu.Lock()
		f.sink.fail = true
		f.sink.mu.Unlock()
		_, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s[1].ID, FormResponse: form, IdempotencyKey: platform.Ptr("rolled-back-1")})
		f.sink.mu.Lock()
		f.sink.fail = false
		f.sink.mu.Unlock()
		if err == nil {
			t.Fatal("booked without its event")
		}
		after, _ := f.svc.ListSlots(ctx, account, run.ID, appointments.SlotFilter{}, platform.PageRequest{Limit: 10})
		if after.Items[1].Remaining != before.Items[1].Remaining {
			t.Fatalf("remaining %d -> %d after a rolled-back booking", before.Items[1].Remaining, after.Items[1].Remaining)
		}
		// The key was not spent either.
		if _, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s[1].ID, FormResponse: map[string]string{"reason": "Vaccine"}, IdempotencyKey: platform.Ptr("rolled-back-1")}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t)
	run := f.queue(t, queues.TypeAppointment, "").Runs[0]
	s := f.slots(t, run.ID, gen("2026-03-08", "09:00", "10:00", 30, 3))
	in := appointments.ScheduleInput{IdempotencyKey: platform.Ptr("order-0001"), CustomerName: platform.Ptr("Ada")}

	first, err := f.svc.Schedule(ctx, account, run.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.svc.Schedule(ctx, account, run.ID, in)
	if err != nil || again.ID != first.ID {
		t.Fatalf("repeat gave %+v, %v; want %s", again, err, first.ID)
	}
	// An empty formResponse is the same request as none.
	in2 := in
	in2.FormResponse = map[string]string{}
	if again, err := f.svc.Schedule(ctx, account, run.ID, in2); err != nil || again.ID != first.ID {
		t.Fatalf("repeat with {} gave %v", err)
	}
	page, _ := f.svc.ListSlots(ctx, account, run.ID, appointments.SlotFilter{}, platform.PageRequest{Limit: 10})
	if page.Items[0].Remaining != 2 {
		t.Fatalf("the repeat took a seat: remaining %d", page.Items[0].Remaining)
	}
	if n := len(f.eventsNamed(t, platform.EventName[appointments.AppointmentScheduled]())); n != 1 {
		t.Fatalf("%d events for one booking", n)
	}
	for name, other := range map[string]appointments.ScheduleInput{
		"another name":  {IdempotencyKey: in.IdempotencyKey, CustomerName: platform.Ptr("Bob")},
		"a slot given":  {IdempotencyKey: in.IdempotencyKey, CustomerName: platform.Ptr("Ada"), SlotID: &s[0].ID},
		"a phone added": {IdempotencyKey: in.IdempotencyKey, CustomerName: platform.Ptr("Ada"), Phone: platform.Ptr("+15550100")},
	} {
		_, err := f.svc.Schedule(ctx, account, run.ID, other)
		if e := wantCode(t, err, appointments.CodeIdempotencyKeyReused, platform.KindConflict); e.Details["idempotencyKey"] != "order-0001" {
			t.Fatalf("%s: details %v", name, e.Details)
		}
	}
	// The same key and body on another run is another request.
	other := f.queue(t, queues.TypeAppointment, "").Runs[0]
	f.slots(t, other.ID, gen("2026-03-08", "09:00", "10:00", 30, 3))
	_, err = f.svc.Schedule(ctx, account, other.ID, in)
	wantCode(t, err, appointments.CodeIdempotencyKeyReused, platform.KindConflict)
	// Keys are per account.
	if _, err := f.svc.Schedule(ctx, "acc_2", run.ID, in); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account's run: %v", err)
	}
	// A cancelled appointment is still what the key made.
	if _, err := f.svc.Cancel(ctx, account, first.ID); err != nil {
		t.Fatal(err)
	}
	if again, err := f.svc.Schedule(ctx, account, run.ID, in); err != nil || again.ID != first.ID || again.Status != appointments.StatusCancelled {
		t.Fatalf("after cancel: %+v %v", again, err)
	}
}

func TestLifecycleCancellationPolicyAndEvents(t *testing.T) {
	f := newFixture(t)
	q := f.queue(t, queues.TypeAppointment, "", func(in *queues.CreateInput) {
		in.Cancellation = &queues.Cancellation{MinNoticeMinutes: platform.Ptr(120)}
	})
	run := q.Runs[0]
	s := f.slots(t, run.ID, gen("2026-03-07", "15:00", "16:00", 60, 2))[0] // starts in 3 hours
	book := func() appointments.Appointment {
		t.Helper()
		a, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s.ID})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	remaining := func() int {
		t.Helper()
		sl, err := f.svc.ListSlots(ctx, account, run.ID, appointments.SlotFilter{}, platform.PageRequest{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return sl.Items[0].Remaining
	}

	a, b := book(), book()
	if remaining() != 0 {
		t.Fatalf("remaining %d", remaining())
	}
	// 3 hours ahead, 2 hours of notice needed: cancelling frees the seat.
	c, err := f.svc.Cancel(ctx, account, a.ID)
	if err != nil || c.Status != appointments.StatusCancelled || c.CancelledAt == nil || remaining() != 1 {
		t.Fatalf("cancel: %+v %v, remaining %d", c, err, remaining())
	}
	_, err = f.svc.Cancel(ctx, account, a.ID)
	if e := wantCode(t, err, appointments.CodeInvalidTransition, platform.KindConflict); e.Details["status"] != "CANCELLED" {
		t.Fatalf("details %v", e.Details)
	}
	if remaining() != 1 {
		t.Fatal("a refused second cancel gave a seat back")
	}

	// One minute inside the notice: refused, seat kept.
	a2 := book()
	f.clock.Set(s.Start.Add(-119 * time.Minute))
	_, err = f.svc.Cancel(ctx, account, a2.ID)
	if e := wantCode(t, err, appointments.CodeCancellationTooLate, platform.KindUnprocessable); e.Details["minNoticeMinutes"] != 120 {
		t.Fatalf("details %v", e.Details)
	}
	if remaining() != 0 {
		t.Fatal("a refused cancel gave a seat back")
	}
	// Exactly at the deadline is still in time.
	f.clock.Set(s.Start.Add(-120 * time.Minute))
	if _, err := f.svc.Cancel(ctx, account, a2.ID); err != nil {
		t.Fatalf("cancel at the deadline: %v", err)
	}
	// Removing the policy (null) lets any cancel through, even after start.
	a3 := book()
	if _, err := f.queues.SetCancellationPolicy(ctx, account, q.ID, queues.CancellationPolicyInput{MinNoticeMinutes: platform.Patch[int]{Set: true, Null: true}}); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(s.Start.Add(10 * time.Minute))
	if _, err := f.svc.Cancel(ctx, account, a3.ID); err != nil {
		t.Fatalf("cancel without a policy: %v", err)
	}

	// b: check in, start, complete.
	f.clock.Set(s.Start.Add(-5 * time.Minute))
	_, err = f.svc.NoShow(ctx, account, b.ID)
	wantCode(t, err, appointments.CodeSlotNotStarted, platform.KindConflict)
	_, err = f.svc.Complete(ctx, account, b.ID)
	wantCode(t, err, appointments.CodeInvalidTransition, platform.KindConflict)
	ci, err := f.svc.CheckIn(ctx, account, b.ID)
	if err != nil || ci.Status != appointments.StatusCheckedIn || ci.CheckedInAt == nil {
		t.Fatalf("check-in %+v %v", ci, err)
	}
	st, err := f.svc.Start(ctx, account, b.ID)
	if err != nil || st.Status != appointments.StatusInService || st.StartedAt == nil || !st.CheckedInAt.Equal(*ci.CheckedInAt) {
		t.Fatalf("start %+v %v", st, err)
	}
	if len(f.eventsNamed(t, platform.EventName[appointments.AppointmentCompleted]())) != 0 {
		t.Fatal("completed before complete")
	}
	done, err := f.svc.Complete(ctx, account, b.ID)
	if err != nil || done.Status != appointments.StatusCompleted || done.CompletedAt == nil {
		t.Fatalf("complete %+v %v", done, err)
	}
	ev := f.eventsNamed(t, platform.EventName[appointments.AppointmentCompleted]())
	var ac appointments.AppointmentCompleted
	if len(ev) != 1 || ev[0].Decode(&ac) != nil || ac.AppointmentID != b.ID || ac.QueueRunID != run.ID || ac.SlotStart != "2026-03-07T15:00:00Z" ||
		ac.Status != "COMPLETED" {
		t.Fatalf("completed events %+v", ev)
	}
	// The seat of a completed appointment stays taken.
	if remaining() != 1 {
		t.Fatalf("remaining %d after complete, want 1 (a3 cancelled, b served)", remaining())
	}

	// No-show from the start of the slot; starting straight from SCHEDULED
	// counts as the arrival.
	f.clock.Set(s.Start)
	if _, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s.ID}); !platform.IsCode(err, appointments.CodeSlotStarted) {
		t.Fatalf("booked a started slot: %v", err)
	}
	ns, err := f.svc.NoShow(ctx, account, b.ID)
	if e := wantCode(t, err, appointments.CodeInvalidTransition, platform.KindConflict); e.Details["status"] != "COMPLETED" {
		t.Fatalf("no-show after complete: %+v %v", ns, e.Details)
	}
}

func TestGetListAndAccountScoping(t *testing.T) {
	f := newFixture(t)
	run := f.queue(t, queues.TypeAppointment, "").Runs[0]
	s := f.slots(t, run.ID, gen("2026-03-08", "09:00", "11:00", 60, 3))
	s9 := f.slots(t, run.ID, gen("2026-03-09", "09:00", "10:00", 60, 3))
	var made []appointments.Appointment
	for _, slot := range []string{s[1].ID, s9[0].ID, s[0].ID, s[1].ID} {
		a, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &slot})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, a)
	}
	if _, err := f.svc.CheckIn(ctx, account, made[3].ID); err != nil {
		t.Fatal(err)
	}
	list := func(flt appointments.ListFilter, limit int) []string {
		t.Helper()
		var out []string
		page := platform.PageRequest{Limit: limit}
		for {
			p, err := f.svc.List(ctx, account, run.ID, flt, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range p.Items {
				out = append(out, a.ID)
			}
			if p.Next == "" {
				return out
			}
			page.After = p.Next
		}
	}
	// By slot start, then by id.
	want := []string{made[2].ID, made[0].ID, made[3].ID, made[1].ID}
	if got := list(appointments.ListFilter{}, 1); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("list %v, want %v", got, want)
	}
	if got := list(appointments.ListFilter{Status: appointments.StatusCheckedIn}, 10); fmt.Sprint(got) != fmt.Sprint([]string{made[3].ID}) {
		t.Fatalf("checked in: %v", got)
	}
	if got := list(appointments.ListFilter{Date: "2026-03-09"}, 10); fmt.Sprint(got) != fmt.Sprint([]string{made[1].ID}) {
		t.Fatalf("on the 9th: %v", got)
	}
	_, err := f.svc.List(ctx, account, run.ID, appointments.ListFilter{Status: "LATE", Date: "tomorrow"}, platform.PageRequest{Limit: 5})
	if e := wantCode(t, err, platform.CodeValidation, platform.KindInvalid); len(platform.FieldErrors(e)) != 2 {
		t.Fatalf("fields %v", e.Details)
	}
	got, err := f.svc.Get(ctx, account, made[0].ID)
	if err != nil || got.ID != made[0].ID {
		t.Fatalf("get %+v %v", got, err)
	}
	_, err = f.svc.Get(ctx, "acc_2", made[0].ID)
	wantCode(t, err, platform.CodeForbidden, platform.KindForbidden)
	_, err = f.svc.Cancel(ctx, "acc_2", made[0].ID)
	wantCode(t, err, platform.CodeForbidden, platform.KindForbidden)
	_, err = f.svc.Get(ctx, account, "apt_missing")
	wantCode(t, err, platform.CodeNotFound, platform.KindNotFound)
	_, err = f.svc.List(ctx, "acc_2", run.ID, appointments.ListFilter{}, platform.PageRequest{Limit: 5})
	wantCode(t, err, platform.CodeForbidden, platform.KindForbidden)
}

func TestDeletingTheEntityDeletesSlotsAndAppointments(t *testing.T) {
	f := newFixture(t)
	run := f.queue(t, queues.TypeAppointment, "").Runs[0]
	s := f.slots(t, run.ID, gen("2026-03-08", "09:00", "10:00", 60, 3))
	a, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{SlotID: &s[0].ID, IdempotencyKey: platform.Ptr("cascade-key")})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.entities.Delete(ctx, account, f.entity); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, account, a.ID); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("appointment after the cascade: %v", err)
	}
	if _, err := f.svc.Schedule(ctx, account, run.ID, appointments.ScheduleInput{}); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("run after the cascade: %v", err)
	}
	// The key went with its appointment: a new run may use it again.
	f.entity = f.mustEntity(t)
	run2 := f.queue(t, queues.TypeAppointment, "").Runs[0]
	s2 := f.slots(t, run2.ID, gen("2026-03-08", "09:00", "10:00", 60, 3))
	if _, err := f.svc.Schedule(ctx, account, run2.ID, appointments.ScheduleInput{SlotID: &s2[0].ID, IdempotencyKey: platform.Ptr("cascade-key")}); err != nil {
		t.Fatalf("key after the cascade: %v", err)
	}
}

func (f *fixture) mustEntity(t *testing.T) string {
	t.Helper()
	e, err := f.entities.Create(ctx, account, entities.CreateInput{Name: platform.Ptr("Second branch")})
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}
