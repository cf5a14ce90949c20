package appointments

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// ErrIdempotencyKeyTaken is what Repository.CreateAppointment returns when
// the account already has an appointment with the same idempotency key
// (a concurrent request with that key committed first).
var ErrIdempotencyKeyTaken = errors.New("appointments: the idempotency key is already used in the account")

// Service is the appointments use cases.
type Service struct {
	repo   Repository
	queues Queues
	uow    platform.UnitOfWork
	events platform.EventSink
	clock  platform.Clock
	// line and jobs put checked-in appointments of HYBRID queues in the
	// run's line; without a line check-in only records arrival.
	line Line
	jobs platform.JobScheduler
	// watchers hear every booking and lifecycle step.
	watchers []Watcher
}

// NewService builds the service. line and jobs let check-in put HYBRID
// appointments in the run's line, scheduling the ones checked in early on
// jobs; a nil line leaves check-in recording the arrival only (the core's
// own tests). watchers hear every booking and lifecycle step (none is
// fine). All are dependencies, not setters: the service is whole once
// built. The turns service it puts appointments in follows them through
// a TurnFollower, not through this service, so neither needs the other
// to be built first (docs/architecture.md, "Wiring without setters").
func NewService(repo Repository, qs Queues, uow platform.UnitOfWork, events platform.EventSink, clock platform.Clock,
	line Line, jobs platform.JobScheduler, watchers ...Watcher) *Service {
	return &Service{repo: repo, queues: qs, uow: uow, events: events, clock: clock, line: line, jobs: jobs, watchers: watchers}
}

// now is the clock's time at the precision Postgres keeps, so what a use
// case returns equals what a later read returns.
func (s *Service) now() time.Time { return storedNow(s.clock) }

func storedNow(c platform.Clock) time.Time { return c.Now().UTC().Truncate(time.Microsecond) }

// run loads a run of the account and its queue; lock takes the run's row
// lock until the unit of work ends.
func (s *Service) run(ctx context.Context, accountID, runID string, lock bool) (queues.Queue, queues.Run, error) {
	get := s.queues.GetRun
	if lock {
		get = s.queues.GetRunForUpdate
	}
	r, err := get(ctx, runID)
	if err != nil {
		return queues.Queue{}, queues.Run{}, err
	}
	if r.AccountID != accountID {
		return queues.Queue{}, queues.Run{}, platform.ForeignResource("queue run")
	}
	q, err := s.queues.GetQueue(ctx, r.QueueID)
	return q, r, err
}

// takesAppointments refuses a TURN queue: slots and appointments belong
// to APPOINTMENT and HYBRID queues.
func takesAppointments(q queues.Queue) error {
	if q.Type == queues.TypeAppointment || q.Type == queues.TypeHybrid {
		return nil
	}
	return platform.Conflict(CodeQueueTypeMismatch,
		"a "+q.Type+" queue takes no appointments; slots and appointments need an APPOINTMENT or HYBRID queue",
		map[string]any{"queueId": q.ID, "queueType": q.Type, "accepts": []string{queues.TypeAppointment, queues.TypeHybrid}})
}

// GenerateSlots makes the slots of one day of a run (spec 2.4) in the
// queue's time zone. Slots that would overlap slots the run already has are
// refused as a whole (SLOT_OVERLAP): generating twice is an error, not a
// merge, so capacity is never doubled by a retried request. The run's row
// is locked while checking, so two concurrent generations cannot both pass.
func (s *Service) GenerateSlots(ctx context.Context, accountID, runID string, in GenerateInput) (SlotBatch, error) {
	if err := in.Validate(); err != nil {
		return SlotBatch{}, err
	}
	var out SlotBatch
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		q, r, err := s.run(ctx, accountID, runID, true)
		if err != nil {
			return err
		}
		if err := takesAppointments(q); err != nil {
			return err
		}
		zone, now := q.Zone(), s.now()
		if err := checkDate(*in.Date, zone, now); err != nil {
			return err
		}
		windows := PlanDay(in, zone)
		if len(windows) == 0 {
			return platform.InvalidField("endTime", "window",
				fmt.Sprintf("leaves no room for a %d-minute slot on %s in %s (the clocks change that day)", *in.SlotMinutes, *in.Date, zone))
		}
		first, last := windows[0].Start, windows[len(windows)-1].End
		if other, found, err := s.repo.FirstOverlap(ctx, r.ID, first, last); err != nil {
			return err
		} else if found {
			return platform.Conflict(CodeSlotOverlap, "the slots would overlap slots the run already has",
				map[string]any{"slotId": other.ID, "start": other.Start, "end": other.End})
		}
		out = SlotBatch{RunID: r.ID, Date: *in.Date, Timezone: zone.String(), Slots: make([]Slot, len(windows))}
		for i, w := range windows {
			out.Slots[i] = Slot{ID: platform.NewID(platform.PrefixSlot), AccountID: accountID, QueueID: q.ID, RunID: r.ID,
				Date: *in.Date, Timezone: zone.String(), Start: w.Start, End: w.End,
				Capacity: *in.Capacity, Remaining: *in.Capacity, CreatedAt: now}
		}
		return s.repo.InsertSlots(ctx, out.Slots)
	})
	return out, err
}

// ListSlots pages through a run's slots by start time.
func (s *Service) ListSlots(ctx context.Context, accountID, runID string, f SlotFilter, page platform.PageRequest) (platform.Page[Slot], error) {
	if f.Date != "" {
		var v platform.Validator
		v.Date("date", f.Date)
		if err := v.Err(); err != nil {
			return platform.Page[Slot]{}, err
		}
	}
	if _, _, err := s.run(ctx, accountID, runID, false); err != nil {
		return platform.Page[Slot]{}, err
	}
	f.Now = s.now()
	items, err := s.repo.ListSlots(ctx, runID, f, page)
	if err != nil {
		return platform.Page[Slot]{}, err
	}
	return platform.PageOf(items, page.Limit, func(sl Slot) string { return SortKey(sl.Start, sl.ID) }), nil
}

// Schedule books an appointment (spec 2.5): into in.SlotID, or into the
// earliest slot with room that has not started. With an idempotency key, a
// repeat of the same request returns the appointment the first one made
// (and raises nothing); the key with a different request is
// IDEMPOTENCY_KEY_REUSED. The seat, the appointment and
// appointment.scheduled commit together.
func (s *Service) Schedule(ctx context.Context, accountID, runID string, in ScheduleInput) (Appointment, error) {
	var v platform.Validator
	in.validate(&v)
	if err := v.Err(); err != nil {
		return Appointment{}, err
	}
	hash := requestHash(runID, in)
	var out Appointment
	var err error
	// Two attempts: when a concurrent request with the same key commits
	// between our look-up and our insert, the insert fails, everything
	// rolls back (the seat too), and the second attempt finds its
	// appointment.
	for attempt := 0; attempt < 2; attempt++ {
		err = s.uow.Do(ctx, func(ctx context.Context) error {
			var err error
			out, err = s.schedule(ctx, accountID, runID, in, hash)
			return err
		})
		if !errors.Is(err, ErrIdempotencyKeyTaken) {
			break
		}
	}
	if errors.Is(err, ErrIdempotencyKeyTaken) {
		// Still taken yet not found: only a key of another, deleted run.
		return Appointment{}, keyReused(*in.IdempotencyKey)
	}
	return out, err
}

func (s *Service) schedule(ctx context.Context, accountID, runID string, in ScheduleInput, hash string) (Appointment, error) {
	q, r, err := s.run(ctx, accountID, runID, false)
	if err != nil {
		return Appointment{}, err
	}
	if err := takesAppointments(q); err != nil {
		return Appointment{}, err
	}
	if in.IdempotencyKey != nil {
		prev, found, err := s.repo.FindByIdempotencyKey(ctx, accountID, *in.IdempotencyKey)
		if err != nil {
			return Appointment{}, err
		}
		if found {
			if prev.RequestHash != hash {
				return Appointment{}, keyReused(*in.IdempotencyKey)
			}
			return prev, nil
		}
	}
	var v platform.Validator
	q.PreAttention.CheckAnswers(&v, "formResponse", in.FormResponse)
	if err := v.Err(); err != nil {
		return Appointment{}, err
	}
	if !r.Open() {
		return Appointment{}, platform.Conflict(queues.CodeRunClosed, "the run is closed; it takes no appointments",
			map[string]any{"runId": r.ID, "status": r.Status})
	}
	now := s.now()
	slot, err := s.takeSeat(ctx, r.ID, in.SlotID, now)
	if err != nil {
		return Appointment{}, err
	}
	a := Appointment{
		ID: platform.NewID(platform.PrefixAppointment), AccountID: accountID, QueueID: q.ID, RunID: r.ID,
		SlotID: slot.ID, SlotStart: slot.Start, SlotEnd: slot.End, Date: slot.Date, Status: StatusScheduled,
		CustomerName: in.CustomerName, Phone: in.Phone, NotifyWhatsapp: platform.Deref(in.NotifyWhatsapp, false),
		Language: in.Language, Notes: in.Notes, FormResponse: in.FormResponse,
		CreatedAt: now, UpdatedAt: now, IdempotencyKey: in.IdempotencyKey, RequestHash: hash,
	}
	if a.FormResponse == nil {
		a.FormResponse = map[string]string{}
	}
	if err := s.repo.CreateAppointment(ctx, a); err != nil {
		return Appointment{}, err
	}
	if err := s.watch(ctx, q, Appointment{}, a); err != nil {
		return Appointment{}, err
	}
	return a, s.emit(ctx, a, scheduled)
}

// takeSeat takes a seat of the named slot, or of the next available one.
func (s *Service) takeSeat(ctx context.Context, runID string, slotID *string, now time.Time) (Slot, error) {
	if slotID == nil {
		slot, ok, err := s.repo.TakeNextSeat(ctx, runID, now)
		if err != nil {
			return Slot{}, err
		}
		if !ok {
			return Slot{}, platform.Conflict(CodeNoSlotAvailable, "no slot of the run that has not started has room left",
				map[string]any{"runId": runID})
		}
		return slot, nil
	}
	slot, err := s.repo.GetSlot(ctx, *slotID)
	if platform.IsCode(err, platform.CodeNotFound) || (err == nil && slot.RunID != runID) {
		// A slot of another run (or account) is as unusable as none.
		return Slot{}, platform.Unprocessable(CodeSlotNotFound, "slotId names no slot of this run",
			map[string]any{"field": "slotId", "slotId": *slotID})
	}
	if err != nil {
		return Slot{}, err
	}
	if !slot.Start.After(now) {
		return Slot{}, platform.Unprocessable(CodeSlotStarted, "the slot has already started; it takes no bookings",
			map[string]any{"slotId": slot.ID, "start": slot.Start})
	}
	slot, ok, err := s.repo.TakeSeat(ctx, slot.ID)
	if err != nil {
		return Slot{}, err
	}
	if !ok {
		return Slot{}, platform.Conflict(CodeSlotFull, "the slot has no capacity left",
			map[string]any{"slotId": slot.ID, "capacity": slot.Capacity})
	}
	return slot, nil
}

func keyReused(key string) error {
	return platform.Conflict(CodeIdempotencyKeyReused,
		"the idempotency key was already used for a different booking request",
		map[string]any{"idempotencyKey": key})
}

// requestHash fingerprints a booking request: the run and every body field
// but the key. An absent formResponse and an empty one are the same request.
func requestHash(runID string, in ScheduleInput) string {
	form := in.FormResponse
	if form == nil {
		form = map[string]string{}
	}
	// encoding/json writes map keys sorted, so equal requests encode alike.
	b, _ := json.Marshal(struct {
		RunID        string            `json:"r"`
		SlotID       *string           `json:"s"`
		CustomerName *string           `json:"c"`
		Phone        *string           `json:"p"`
		Notes        *string           `json:"n"`
		FormResponse map[string]string `json:"f"`
		// The reminder's members (issue 27) are left out when absent or
		// false, so the hashes stored before them still match.
		NotifyWhatsapp bool    `json:"w,omitempty"`
		Language       *string `json:"l,omitempty"`
	}{runID, in.SlotID, in.CustomerName, in.Phone, in.Notes, form, platform.Deref(in.NotifyWhatsapp, false), in.Language})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Get returns an appointment of the account.
func (s *Service) Get(ctx context.Context, accountID, id string) (Appointment, error) {
	a, err := s.repo.GetAppointment(ctx, id)
	if err != nil {
		return Appointment{}, err
	}
	if a.AccountID != accountID {
		return Appointment{}, platform.ForeignResource("appointment")
	}
	return a, nil
}

// List pages through a run's appointments by slot start.
func (s *Service) List(ctx context.Context, accountID, runID string, f ListFilter, page platform.PageRequest) (platform.Page[Appointment], error) {
	var v platform.Validator
	if f.Status != "" && !f.Status.Valid() {
		v.OneOf("status", string(f.Status), Statuses...)
	}
	if f.Date != "" {
		v.Date("date", f.Date)
	}
	if err := v.Err(); err != nil {
		return platform.Page[Appointment]{}, err
	}
	if _, _, err := s.run(ctx, accountID, runID, false); err != nil {
		return platform.Page[Appointment]{}, err
	}
	items, err := s.repo.ListAppointments(ctx, runID, f, page)
	if err != nil {
		return platform.Page[Appointment]{}, err
	}
	return platform.PageOf(items, page.Limit, func(a Appointment) string { return SortKey(a.SlotStart, a.ID) }), nil
}

// Cancel cancels a SCHEDULED or CHECKED_IN appointment and gives its seat
// back. Under a cancellation policy, a cancel later than minNoticeMinutes
// before the slot starts is CANCELLATION_TOO_LATE.
func (s *Service) Cancel(ctx context.Context, accountID, id string) (Appointment, error) {
	return s.transition(ctx, accountID, id, ActionCancel, func(ctx context.Context, a Appointment, now time.Time) error {
		q, err := s.queues.GetQueue(ctx, a.QueueID)
		if err != nil {
			return err
		}
		if c := q.Cancellation; c != nil && c.MinNoticeMinutes != nil {
			deadline := a.SlotStart.Add(-time.Duration(*c.MinNoticeMinutes) * time.Minute)
			if now.After(deadline) {
				return platform.Unprocessable(CodeCancellationTooLate,
					"the queue takes cancellations up to "+strconv.Itoa(*c.MinNoticeMinutes)+" minutes before the slot starts",
					map[string]any{"minNoticeMinutes": *c.MinNoticeMinutes, "slotStart": a.SlotStart, "deadline": deadline})
			}
		}
		return s.repo.ReturnSeat(ctx, a.SlotID)
	}, func(ctx context.Context, _ queues.Queue, a *Appointment) error {
		if a.TurnID == nil {
			return nil
		}
		// Out of the line too; the turn's follower finds the appointment
		// cancelled already and changes nothing.
		_, err := s.line.CancelFor(ctx, a.AccountID, *a.TurnID, CancelReason)
		return err
	})
}

// CancelReason is turn.cancelled's reason when the turn of a cancelled
// appointment leaves the line.
const CancelReason = "appointment_cancelled"

// CheckIn records the customer's arrival. In a HYBRID queue the
// appointment then stands in the run's line as a turn from its effective
// join time: at once when its slot has started, else at the slot's start
// (a job, JoinLine).
//
// A closed run refuses the check-in (QUEUE_CLOSED), early or late: the
// customer would stand in no line. A run closed later, over the slot's
// start, leaves the appointment waiting to join (JoinsLineAt past) until
// the run opens again (OnEvent).
func (s *Service) CheckIn(ctx context.Context, accountID, id string) (Appointment, error) {
	return s.transition(ctx, accountID, id, ActionCheckIn, nil, func(ctx context.Context, q queues.Queue, a *Appointment) error {
		if q.Type != queues.TypeHybrid || s.line == nil {
			return nil
		}
		run, err := s.queues.GetRun(ctx, a.RunID) // locked by transition
		if err != nil {
			return err
		}
		if !run.Open() {
			return platform.Conflict(turns.CodeQueueClosed, "the queue run is closed; a HYBRID appointment checks in while its run is open",
				map[string]any{"queueRunId": run.ID, "appointmentId": a.ID})
		}
		if a.SlotStart.After(*a.CheckedInAt) {
			at := a.SlotStart
			a.JoinsLineAt = &at
			if err := s.repo.UpdateAppointment(ctx, *a); err != nil {
				return err
			}
			return s.jobs.Schedule(ctx, platform.Job{Kind: JoinLineJobKind, Args: JoinLineArgs{AppointmentID: a.ID},
				RunAt: a.SlotStart, UniqueKey: a.ID, MaxAttempts: joinLineMaxAttempts})
		}
		return s.join(ctx, a)
	})
}

// JoinLineJobKind is the job that puts an appointment checked in before its
// slot started in the line at the slot's start.
const JoinLineJobKind = "appointments.join_line"

// joinLineMaxAttempts: the job is quick and idempotent; retries cover the
// database being away for a while.
const joinLineMaxAttempts = 10

// JoinLineArgs are the join job's arguments.
type JoinLineArgs struct {
	AppointmentID string `json:"appointmentId"`
}

// JoinLine is the join job: the appointment joins the line if it is still
// checked in and not in it yet; anything else (cancelled, started, already
// in line) means there is nothing to do, so running it twice is harmless.
// A closed run is not a failure to retry: the appointment stays waiting to
// join (JoinsLineAt past, visible on its read, the dashboard and the
// board) and joins when the run opens again (OnEvent). Before issue 23 the
// job failed with QUEUE_CLOSED until it was discarded, and the customer,
// checked in, was in no line for good.
func (s *Service) JoinLine(ctx context.Context, args JoinLineArgs) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		peek, err := s.repo.GetAppointment(ctx, args.AppointmentID)
		if platform.IsCode(err, platform.CodeNotFound) {
			return nil // deleted with its queue
		}
		if err != nil {
			return err
		}
		run, err := s.queues.GetRunForUpdate(ctx, peek.RunID)
		if err != nil {
			return err
		}
		a, err := s.repo.GetAppointmentForUpdate(ctx, args.AppointmentID)
		if err != nil || a.Status != StatusCheckedIn || a.TurnID != nil {
			return err
		}
		if !run.Open() {
			if a.JoinsLineAt == nil { // checked in before the column existed
				at := a.SlotStart
				a.JoinsLineAt = &at
				return s.repo.UpdateAppointment(ctx, a)
			}
			return nil // joins when the run opens again
		}
		return s.join(ctx, &a)
	})
}

// OnEvent puts the appointments waiting to join a run's line in it when
// the run opens again (an events.Subscriber of queue.opened, inside the
// transaction that opened the run and holds its lock), in the order they
// were due: each one's slot start, then id. They were checked in while
// the run was open and their slot started while it was closed.
func (s *Service) OnEvent(ctx context.Context, e platform.Event) error {
	if e.Name != platform.EventName[queues.QueueOpened]() || e.RunID == "" || s.line == nil {
		return nil
	}
	_, err := s.joinWaiting(ctx, e.RunID)
	return err
}

// joinWaiting puts the run's appointments waiting to join in its line, in
// the order they were due; the caller holds the run's lock and has
// checked it is open. It returns how many joined.
func (s *Service) joinWaiting(ctx context.Context, runID string) (int, error) {
	waiting, err := s.repo.Joining(ctx, runID, s.now())
	if err != nil {
		return 0, err
	}
	joined := 0
	for _, w := range waiting {
		a, err := s.repo.GetAppointmentForUpdate(ctx, w.ID)
		if err != nil {
			return joined, err
		}
		if a.Status != StatusCheckedIn || a.TurnID != nil {
			continue
		}
		if err := s.join(ctx, &a); err != nil {
			return joined, fmt.Errorf("appointments: joining %s to the line of run %s: %w", a.ID, runID, err)
		}
		joined++
	}
	return joined, nil
}

// JoinDueJobKind is the periodic sweep (JoinDue) that joins appointments
// left waiting on an open run.
const JoinDueJobKind = "appointments.join_due"

// JoinDue is the safety net of the join job: every appointment waiting to
// join a run that is open joins its line. It finds those whose join job
// gave up (the database away through every attempt) or was lost; a run
// that opened took its own in already (OnEvent). Each run is its own unit
// of work; a run that fails does not stop the others, and the first error
// is returned so the job is retried. It returns how many joined.
func (s *Service) JoinDue(ctx context.Context) (int, error) {
	if s.line == nil {
		return 0, nil
	}
	runs, err := s.repo.RunsJoining(ctx, s.now())
	if err != nil {
		return 0, err
	}
	joined := 0
	var first error
	for _, runID := range runs {
		err := s.uow.Do(ctx, func(ctx context.Context) error {
			run, err := s.queues.GetRunForUpdate(ctx, runID)
			if err != nil || !run.Open() {
				return err // a closed run waits for its opening
			}
			n, err := s.joinWaiting(ctx, runID)
			joined += n
			return err
		})
		if err != nil && first == nil {
			first = err
		}
	}
	return joined, first
}

// join admits the appointment's turn into its run and links the two. The
// turn takes the run's next number and joins at the end of the NORMAL
// priority, as a walk-in arriving now would, with the booking's phone.
func (s *Service) join(ctx context.Context, a *Appointment) error {
	// The customer's phone goes with them into the line: the turn's
	// moments (joined, called...) reach the number the booking left, as a
	// walk-in's would.
	t, err := s.line.Admit(ctx, a.AccountID, a.RunID, turns.Admission{PeopleCount: 1, AppointmentID: &a.ID,
		Phone: a.Phone, NotifyWhatsapp: a.NotifyWhatsapp})
	if err != nil {
		return err
	}
	a.TurnID, a.JoinsLineAt, a.UpdatedAt = &t.ID, nil, s.now()
	return s.repo.UpdateAppointment(ctx, *a)
}

// TurnFollower keeps HYBRID appointments in step with the turns they
// stand in the line as: the turns.Follower the turns service is built
// with. It is its own small type, not a method of Service, because the
// Service needs the turns service (its Line) and the turns service needs
// its followers: with the follower apart, the turns service is built
// with it and the appointments service with the turns service, no cycle
// and no setter. It needs only the appointments' storage, the events and
// the clock.
type TurnFollower struct {
	repo   Repository
	events platform.EventSink
	clock  platform.Clock
}

// NewTurnFollower builds the follower.
func NewTurnFollower(repo Repository, events platform.EventSink, clock platform.Clock) *TurnFollower {
	return &TurnFollower{repo: repo, events: events, clock: clock}
}

// TurnChanged keeps an appointment in step with the turn it stands in the
// line as: waiting, held or called is CHECKED_IN, in
// service IN_SERVICE, and the turn's end is the appointment's, with
// appointment.completed raised on completion. A cancelled turn gives the
// seat back, as a cancelled appointment does. The appointment's
// cancellation is final: its turn cannot be reopened.
func (s *TurnFollower) TurnChanged(ctx context.Context, before, after turns.Turn) error {
	a, err := s.repo.GetAppointmentForUpdate(ctx, *after.AppointmentID)
	if err != nil {
		return err
	}
	to := mirrored(after.Status)
	if a.Status == to {
		return nil
	}
	if a.Status == StatusCancelled {
		return platform.Conflict(CodeAppointmentCancelled, "the turn's appointment was cancelled; it cannot come back",
			map[string]any{"appointmentId": a.ID, "turnId": after.ID})
	}
	now := storedNow(s.clock)
	if a.Status.Final() { // the turn came back (reopen, re-entry)
		a.CompletedAt, a.NoShowAt = nil, nil
	}
	checkedIn := a.CheckedInAt
	a.apply(to, now)
	if checkedIn != nil {
		a.CheckedInAt = checkedIn // arrived once, at check-in
	}
	if err := s.repo.UpdateAppointment(ctx, a); err != nil {
		return err
	}
	switch to {
	case StatusCancelled:
		return s.repo.ReturnSeat(ctx, a.SlotID)
	case StatusCompleted:
		return emit(ctx, s.events, a, completed)
	}
	return nil
}

// mirrored is the appointment status that stands for a turn status.
func mirrored(st turns.Status) Status {
	switch st {
	case turns.InService:
		return StatusInService
	case turns.Completed:
		return StatusCompleted
	case turns.NoShow:
		return StatusNoShow
	case turns.Cancelled:
		return StatusCancelled
	}
	return StatusCheckedIn
}

var _ turns.Follower = (*TurnFollower)(nil)

// Start starts the service; from SCHEDULED it records the arrival too.
func (s *Service) Start(ctx context.Context, accountID, id string) (Appointment, error) {
	return s.transition(ctx, accountID, id, ActionStart, nil, nil)
}

// Complete finishes the service and raises appointment.completed.
func (s *Service) Complete(ctx context.Context, accountID, id string) (Appointment, error) {
	return s.transition(ctx, accountID, id, ActionComplete, nil, nil)
}

// NoShow records that the customer did not come; refused before the slot
// has started (SLOT_NOT_STARTED). The seat stays taken: the time is spent.
func (s *Service) NoShow(ctx context.Context, accountID, id string) (Appointment, error) {
	return s.transition(ctx, accountID, id, ActionNoShow, func(_ context.Context, a Appointment, now time.Time) error {
		if now.Before(a.SlotStart) {
			return platform.Conflict(CodeSlotNotStarted, "the slot has not started; a no-show is recorded from its start",
				map[string]any{"slotStart": a.SlotStart})
		}
		return nil
	}, nil)
}

// Do applies action by name; the HTTP adapter routes /appointments/{id}/
// <action> through it.
func (s *Service) Do(ctx context.Context, accountID, id string, action Action) (Appointment, error) {
	switch action {
	case ActionCancel:
		return s.Cancel(ctx, accountID, id)
	case ActionCheckIn:
		return s.CheckIn(ctx, accountID, id)
	case ActionStart:
		return s.Start(ctx, accountID, id)
	case ActionComplete:
		return s.Complete(ctx, accountID, id)
	case ActionNoShow:
		return s.NoShow(ctx, accountID, id)
	}
	return Appointment{}, platform.NotFound("appointment action", string(action))
}

// transition runs one lifecycle step on the locked appointment: the state
// machine first, then the action's own rule (check), then the write, the
// action's consequences (then) and, for complete, the event. The run is
// locked before the appointment, the order of docs/turns.md, since a
// HYBRID appointment's steps change the run's line.
func (s *Service) transition(ctx context.Context, accountID, id string, action Action,
	check func(ctx context.Context, a Appointment, now time.Time) error,
	then func(ctx context.Context, q queues.Queue, a *Appointment) error) (Appointment, error) {
	var out Appointment
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		peek, err := s.repo.GetAppointment(ctx, id)
		if err != nil {
			return err
		}
		if peek.AccountID != accountID {
			return platform.ForeignResource("appointment")
		}
		q, _, err := s.run(ctx, accountID, peek.RunID, true)
		if err != nil {
			return err
		}
		a, err := s.repo.GetAppointmentForUpdate(ctx, id)
		if err != nil {
			return err
		}
		to, err := a.Status.Next(action)
		if err != nil {
			return err
		}
		if a.TurnID != nil && action != ActionCancel {
			return platform.Conflict(CodeInLine, "the appointment stands in the line as a turn: "+string(action)+" its turn instead",
				map[string]any{"appointmentId": a.ID, "turnId": *a.TurnID, "action": string(action)})
		}
		now := s.now()
		if check != nil {
			if err := check(ctx, a, now); err != nil {
				return err
			}
		}
		before := a
		a.apply(to, now)
		if err := s.repo.UpdateAppointment(ctx, a); err != nil {
			return err
		}
		if err := s.watch(ctx, q, before, a); err != nil {
			return err
		}
		if then != nil {
			if err := then(ctx, q, &a); err != nil {
				return err
			}
		}
		out = a
		if to == StatusCompleted {
			return s.emit(ctx, a, completed)
		}
		return nil
	})
	return out, err
}

// SortKey is the paging key of slots and appointments: the start instant
// (fixed width, so keys compare as strings in time order), then the id.
func SortKey(start time.Time, id string) string {
	return fmt.Sprintf("%020d|%s", start.UnixMicro(), id)
}

// ParseSortKey reads a SortKey back; ok is false for anything else.
func ParseSortKey(key string) (start time.Time, id string, ok bool) {
	micros, id, found := strings.Cut(key, "|")
	if !found || len(micros) != 20 || id == "" {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(micros, 10, 64)
	if err != nil {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}

// PageAfter reads page.After for a repository: the zero time and "" when
// the page starts at the beginning, INVALID_CURSOR when it is not a
// SortKey (a cursor of another list that got past the HTTP layer's check).
func PageAfter(page platform.PageRequest) (start time.Time, id string, err error) {
	if page.After == "" {
		return time.Time{}, "", nil
	}
	start, id, ok := ParseSortKey(page.After)
	if !ok {
		return time.Time{}, "", platform.NewError(platform.KindInvalid, platform.CodeInvalidCursor,
			"the cursor is malformed", map[string]any{"parameter": "cursor"})
	}
	return start, id, nil
}
