package contract

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
)

// aptStack is the appointments module on one adapter set, with what its
// tests need around it: an account with an entity, the queues service to
// make queues and runs, the event log and a clock that stands still.
type aptStack struct {
	svc      *appointments.Service
	repo     appointments.Repository
	queues   *queues.Service
	entities *entities.Service
	events   interface {
		List(ctx context.Context, accountID, after string, limit int) ([]platform.Event, error)
	}
	clock   *platformtest.Clock
	account string
	entity  string
}

// aptNow is where every appointments contract test starts: Saturday
// 2026-03-07, 12:00 UTC.
var aptNow = time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)

// aptFromSet builds the stack on a ready adapter set.
func aptFromSet(t testing.TB, set adapterset.Set, clock *platformtest.Clock) *aptStack {
	t.Helper()
	return aptFinish(t, accounts.NewService(set.Accounts, set.UoW, clock), set.Entities, set.Queues, set.Appointments,
		eventLog(t, set), set.UoW, clock)
}

func aptFinish(t testing.TB, accs *accounts.Service, ents entities.Repository, qrepo queues.Repository,
	repo appointments.Repository, ev EventLog, uow platform.UnitOfWork, clock *platformtest.Clock) *aptStack {
	t.Helper()
	ctx := context.Background()
	bus := events.NewBus(ev)
	entSvc := entities.NewService(ents, uow, clock)
	st := &aptStack{
		svc:      appointments.NewService(repo, qrepo, uow, bus, clock, nil, nil),
		repo:     repo,
		queues:   queues.NewService(qrepo, entSvc, uow, bus, clock),
		entities: entSvc,
		events:   ev,
		clock:    clock,
	}
	acc, err := accs.CreateAccount(ctx, accounts.CreateAccountInput{Name: "Clinic", Plan: accounts.PlanPremium})
	if err != nil {
		t.Fatal(err)
	}
	st.account = acc.ID
	e, err := entSvc.Create(ctx, acc.ID, entities.CreateInput{Name: platform.Ptr("Main branch")})
	if err != nil {
		t.Fatal(err)
	}
	st.entity = e.ID
	return st
}

// run creates an APPOINTMENT queue and returns its open run.
func (st *aptStack) run(t testing.TB, mod ...func(*queues.CreateInput)) queues.Run {
	t.Helper()
	in := queues.CreateInput{EntityID: &st.entity, Name: platform.Ptr("Clinic"), Type: platform.Ptr(queues.TypeAppointment)}
	for _, m := range mod {
		m(&in)
	}
	q, err := st.queues.Create(context.Background(), st.account, in)
	if err != nil {
		t.Fatal(err)
	}
	return q.Runs[0]
}

func (st *aptStack) slots(t testing.TB, runID, date, start, end string, minutes, capacity int) []appointments.Slot {
	t.Helper()
	b, err := st.svc.GenerateSlots(context.Background(), st.account, runID, appointments.GenerateInput{
		Date: &date, StartTime: &start, EndTime: &end, SlotMinutes: &minutes, Capacity: &capacity})
	if err != nil {
		t.Fatal(err)
	}
	return b.Slots
}

func (st *aptStack) slot(t testing.TB, id string) appointments.Slot {
	t.Helper()
	s, err := st.repo.GetSlot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// aptStacks builds each test's stack on a fresh set of the backend.
func aptStacks(newSet NewSet) func(t *testing.T) *aptStack {
	return func(t *testing.T) *aptStack { return aptFromSet(t, newSet(t), platformtest.NewClock(aptNow)) }
}

// RunAppointments checks that the backend's repository keeps the promises
// of appointments.Repository, through the service where the promise is
// about a use case.
func RunAppointments(t *testing.T, newSet NewSet) {
	runAppointments1(t, newSet)
	runAppointments2(t, newSet)
}

// runAppointments1 is part 1 of RunAppointments: seats never go below zero
// nor above capacity; the next seat is the earliest slot with room that has
// not started; overlap is any shared instant; touching is not; listing
// filters and pages in time order.
func runAppointments1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	newStack := aptStacks(newSet)
	t.Run("seats never go below zero nor above capacity", func(t *testing.T) {
		st := newStack(t)
		s := st.slots(t, st.run(t).ID, "2026-03-08", "09:00", "09:30", 30, 3)[0]
		for i := 0; i < 3; i++ {
			got, ok, err := st.repo.TakeSeat(ctx, s.ID)
			if err != nil || !ok || got.Remaining != 2-i {
				t.Fatalf("take %d: %+v %v %v", i, got, ok, err)
			}
		}
		full, ok, err := st.repo.TakeSeat(ctx, s.ID)
		if err != nil || ok || full.Remaining != 0 || full.ID != s.ID {
			t.Fatalf("a full slot gave a seat: %+v %v %v", full, ok, err)
		}
		for i := 0; i < 5; i++ {
			if err := st.repo.ReturnSeat(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
		}
		if got := st.slot(t, s.ID).Remaining; got != 3 {
			t.Fatalf("remaining %d after returning more seats than taken, want the capacity 3", got)
		}
		if _, _, err := st.repo.TakeSeat(ctx, "slot_missing"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing slot: %v", err)
		}
	})

	t.Run("the next seat is the earliest slot with room that has not started", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-07", "11:00", "15:00", 60, 2) // 11:00 and 12:00 have started at 12:00
		var got []string
		for {
			sl, ok, err := st.repo.TakeNextSeat(ctx, run.ID, aptNow)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, sl.ID)
		}
		want := []string{s[2].ID, s[2].ID, s[3].ID, s[3].ID}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
			t.Fatalf("next seats %v, want %v", got, want)
		}
		if st.slot(t, s[0].ID).Remaining != 2 || st.slot(t, s[1].ID).Remaining != 2 {
			t.Fatal("a started slot gave a seat")
		}
	})

	t.Run("overlap is any shared instant; touching is not", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "10:00", 30, 1)
		at := func(hhmm string) time.Time {
			v, _ := time.Parse("2006-01-02 15:04", "2026-03-08 "+hhmm)
			return v
		}
		for _, c := range []struct {
			from, to string
			want     string
		}{
			{"08:00", "09:00", ""}, {"10:00", "11:00", ""}, {"08:00", "09:01", s[0].ID},
			{"09:45", "11:00", s[1].ID}, {"08:00", "12:00", s[0].ID}, {"09:10", "09:20", s[0].ID},
		} {
			got, found, err := st.repo.FirstOverlap(ctx, run.ID, at(c.from), at(c.to))
			if err != nil || found != (c.want != "") || (found && got.ID != c.want) {
				t.Fatalf("[%s, %s): %+v %v %v, want %q", c.from, c.to, got.ID, found, err, c.want)
			}
		}
	})

	t.Run("listing filters and pages in time order", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		// Generated out of order, so id order is not time order.
		late := st.slots(t, run.ID, "2026-03-09", "09:00", "10:00", 30, 1)
		early := st.slots(t, run.ID, "2026-03-08", "09:00", "10:00", 30, 1)
		if _, _, err := st.repo.TakeSeat(ctx, early[1].ID); err != nil {
			t.Fatal(err)
		}
		walk := func(f appointments.SlotFilter) []string {
			var out []string
			page := platform.PageRequest{Limit: 1}
			for {
				p, err := st.svc.ListSlots(ctx, st.account, run.ID, f, page)
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
		all := walk(appointments.SlotFilter{})
		want := []string{early[0].ID, early[1].ID, late[0].ID, late[1].ID}
		if len(all) != 4 || all[0] != want[0] || all[1] != want[1] || all[2] != want[2] || all[3] != want[3] {
			t.Fatalf("all %v, want %v", all, want)
		}
		avail := walk(appointments.SlotFilter{Available: true, Date: "2026-03-08"})
		if len(avail) != 1 || avail[0] != early[0].ID {
			t.Fatalf("available on the 8th: %v", avail)
		}
	})
}

// runAppointments2 is part 2 of RunAppointments: an appointment reads back
// as written; an idempotency key is unique per account; the event commits
// with the booking; deleting the entity deletes slots and appointments.
func runAppointments2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	newStack := aptStacks(newSet)
	t.Run("an appointment reads back as written", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t, func(in *queues.CreateInput) {
			in.PreAttention = &queues.PreAttention{Questions: []queues.Question{{ID: platform.Ptr("why"), Label: platform.Ptr("Why?")}}}
		})
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "10:00", 30, 2)
		// A clock with nanoseconds: what is returned must equal what is read.
		st.clock.Set(aptNow.Add(123456789 * time.Nanosecond))
		a, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{SlotID: &s[1].ID,
			IdempotencyKey: platform.Ptr("readback-1"), CustomerName: platform.Ptr("Ada Lovelace"),
			Phone: platform.Ptr("+44 20 7946 0000"), NotifyWhatsapp: platform.Ptr(true), Language: platform.Ptr("pt"),
			Notes: platform.Ptr("wheelchair"), FormResponse: map[string]string{"why": "checkup"}})
		if err != nil {
			t.Fatal(err)
		}
		if a, err = st.svc.CheckIn(ctx, st.account, a.ID); err != nil {
			t.Fatal(err)
		}
		// The link to a HYBRID line's turn is written with the rest.
		a.TurnID = platform.Ptr("turn_readback")
		if err := st.repo.UpdateAppointment(ctx, a); err != nil {
			t.Fatal(err)
		}
		got, err := st.svc.Get(ctx, st.account, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		wj, _ := json.Marshal(a)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) || got.RequestHash != a.RequestHash || *got.IdempotencyKey != "readback-1" {
			t.Fatalf("read back\n%s\nwant\n%s", gj, wj)
		}
	})

	t.Run("an idempotency key is unique per account", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "10:00", 30, 5)
		mk := func(account string) appointments.Appointment {
			return appointments.Appointment{ID: platform.NewID(platform.PrefixAppointment), AccountID: account, QueueID: s[0].QueueID,
				RunID: run.ID, SlotID: s[0].ID, SlotStart: s[0].Start, SlotEnd: s[0].End, Date: s[0].Date,
				Status: appointments.StatusScheduled, IdempotencyKey: platform.Ptr("same-key-1"), RequestHash: "h",
				CreatedAt: aptNow, UpdatedAt: aptNow}
		}
		first := mk(st.account)
		if err := st.repo.CreateAppointment(ctx, first); err != nil {
			t.Fatal(err)
		}
		if err := st.repo.CreateAppointment(ctx, mk(st.account)); !errors.Is(err, appointments.ErrIdempotencyKeyTaken) {
			t.Fatalf("second appointment with the key: %v", err)
		}
		found, ok, err := st.repo.FindByIdempotencyKey(ctx, st.account, "same-key-1")
		if err != nil || !ok || found.ID != first.ID {
			t.Fatalf("find: %+v %v %v", found, ok, err)
		}
		if _, ok, _ := st.repo.FindByIdempotencyKey(ctx, "acc_other", "same-key-1"); ok {
			t.Fatal("another account sees the key")
		}
		// Appointments without a key never collide.
		for i := 0; i < 2; i++ {
			a := mk(st.account)
			a.IdempotencyKey = nil
			if err := st.repo.CreateAppointment(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("the event commits with the booking", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "10:00", 60, 1)
		a, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.events.List(ctx, st.account, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		var got *platform.Event
		for i := range evs {
			if evs[i].Name == platform.EventName[appointments.AppointmentScheduled]() {
				got = &evs[i]
			}
		}
		var d appointments.AppointmentScheduled
		if got == nil || got.Decode(&d) != nil || d.AppointmentID != a.ID || d.QueueRunID != run.ID || d.SlotID != s[0].ID ||
			d.SlotStart != "2026-03-08T09:00:00Z" || got.RunID != run.ID {
			t.Fatalf("event %+v", got)
		}
	})

	t.Run("deleting the entity deletes slots and appointments", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "10:00", 60, 1)
		a, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.entities.Delete(ctx, st.account, st.entity); err != nil {
			t.Fatal(err)
		}
		if _, err := st.repo.GetSlot(ctx, s[0].ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("slot after the cascade: %v", err)
		}
		if _, err := st.repo.GetAppointment(ctx, a.ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("appointment after the cascade: %v", err)
		}
	})
}

// RunAppointmentsWaitingToJoin: joinsLineAt is stored and read
// back; Joining lists a run's appointments whose joinsLineAt has come, by
// joinsLineAt then id, and CountJoining counts them, on both adapters
// (issue 23: the appointments a reopened run takes in).
func RunAppointmentsWaitingToJoin(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	newStack := aptStacks(newSet)
	{
		st := newStack(t)
		run := st.run(t, func(in *queues.CreateInput) { in.Type = platform.Ptr(queues.TypeHybrid) })
		other := st.run(t, func(in *queues.CreateInput) { in.Type = platform.Ptr(queues.TypeHybrid) })
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "10:00", 30, 5)
		book := func(runID, slotID string, joins *time.Time) appointments.Appointment {
			a, err := st.svc.Schedule(ctx, st.account, runID, appointments.ScheduleInput{SlotID: &slotID})
			if err != nil {
				t.Fatal(err)
			}
			a.JoinsLineAt = joins
			if err := st.repo.UpdateAppointment(ctx, a); err != nil {
				t.Fatal(err)
			}
			return a
		}
		nine, half := s[0].Start, s[1].Start
		second := book(run.ID, s[1].ID, &half)
		first := book(run.ID, s[0].ID, &nine)
		book(run.ID, s[0].ID, nil) // not waiting
		os := st.slots(t, other.ID, "2026-03-08", "09:00", "09:30", 30, 1)
		book(other.ID, os[0].ID, &nine) // another run's

		got, err := st.repo.GetAppointment(ctx, first.ID)
		if err != nil || got.JoinsLineAt == nil || !got.JoinsLineAt.Equal(nine) {
			t.Fatalf("joinsLineAt read back: %v %v", got.JoinsLineAt, err)
		}
		for _, c := range []struct {
			at   time.Time
			want []string
		}{
			{nine.Add(-time.Second), nil},
			{nine, []string{first.ID}},
			{half.Add(time.Hour), []string{first.ID, second.ID}},
		} {
			list, err := st.repo.Joining(ctx, run.ID, c.at)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, a := range list {
				ids = append(ids, a.ID)
			}
			n, err := st.repo.CountJoining(ctx, run.ID, c.at)
			if err != nil || n != len(c.want) || len(ids) != len(c.want) || (len(ids) > 0 && (ids[0] != c.want[0] || ids[len(ids)-1] != c.want[len(c.want)-1])) {
				t.Fatalf("at %v: %v (count %d, %v), want %v", c.at, ids, n, err, c.want)
			}
		}
		runs, err := st.repo.RunsJoining(ctx, nine)
		want := []string{run.ID, other.ID}
		if run.ID > other.ID {
			want = []string{other.ID, run.ID}
		}
		if err != nil || len(runs) != 2 || runs[0] != want[0] || runs[1] != want[1] {
			t.Fatalf("runs joining: %v %v, want %v", runs, err, want)
		}
		if runs, err := st.repo.RunsJoining(ctx, nine.Add(-time.Second)); err != nil || len(runs) != 0 {
			t.Fatalf("runs joining before any is due: %v %v", runs, err)
		}
	}
}
