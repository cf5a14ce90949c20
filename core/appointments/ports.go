package appointments

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Every port of the module (docs/architecture.md, "Ports").

// Repository stores slots and appointments. The seat operations are the
// concurrency contract: each is atomic with every concurrent caller, so a
// slot's remaining capacity never drops below zero nor rises above its
// capacity, whatever the interleaving.
type Repository interface {
	// InsertSlots stores new slots.
	InsertSlots(ctx context.Context, slots []Slot) error
	// GetSlot returns a slot (NotFound when missing).
	GetSlot(ctx context.Context, id string) (Slot, error)
	// FirstOverlap returns the earliest slot of the run whose span meets
	// [start, end), if any.
	FirstOverlap(ctx context.Context, runID string, start, end time.Time) (Slot, bool, error)
	// ListSlots returns up to page.Limit+1 slots of the run that pass f,
	// ordered by start then id, after the slot whose SortKey is page.After.
	ListSlots(ctx context.Context, runID string, f SlotFilter, page platform.PageRequest) ([]Slot, error)
	// TakeSeat takes one seat of the slot if it has one left and returns
	// the slot after the change and true; false (and no change) when full.
	TakeSeat(ctx context.Context, slotID string) (Slot, bool, error)
	// TakeNextSeat takes one seat of the earliest slot of the run (by start,
	// then id) that starts after now and has one left; false when there is
	// none. Concurrent callers fill slots in that order and never overbook.
	TakeNextSeat(ctx context.Context, runID string, now time.Time) (Slot, bool, error)
	// ReturnSeat gives one seat back to the slot, never beyond its capacity.
	ReturnSeat(ctx context.Context, slotID string) error

	// CreateAppointment stores a new appointment; ErrIdempotencyKeyTaken
	// when its key is already used in the account.
	CreateAppointment(ctx context.Context, a Appointment) error
	GetAppointment(ctx context.Context, id string) (Appointment, error)
	// GetAppointmentForUpdate also locks the appointment until the unit of
	// work ends, so concurrent operations on it serialise.
	GetAppointmentForUpdate(ctx context.Context, id string) (Appointment, error)
	// FindByIdempotencyKey returns the account's appointment made with key.
	FindByIdempotencyKey(ctx context.Context, accountID, key string) (Appointment, bool, error)
	UpdateAppointment(ctx context.Context, a Appointment) error
	// ListAppointments returns up to page.Limit+1 appointments of the run
	// that pass f, ordered by slot start then id, after the appointment
	// whose SortKey is page.After.
	ListAppointments(ctx context.Context, runID string, f ListFilter, page platform.PageRequest) ([]Appointment, error)
	// Joining returns the run's appointments waiting to join its line at
	// now (JoinsLineAt set and reached), by JoinsLineAt then id.
	Joining(ctx context.Context, runID string, now time.Time) ([]Appointment, error)
	// CountJoining counts them.
	CountJoining(ctx context.Context, runID string, now time.Time) (int, error)
	// RunsJoining lists the runs (ids, sorted) that have appointments
	// waiting to join at now.
	RunsJoining(ctx context.Context, now time.Time) ([]string, error)
}

// Queues is what this module needs of the queues module: queues.Repository
// satisfies it.
type Queues interface {
	GetQueue(ctx context.Context, id string) (queues.Queue, error)
	GetRun(ctx context.Context, id string) (queues.Run, error)
	GetRunForUpdate(ctx context.Context, id string) (queues.Run, error)
}

// Line is what a HYBRID queue's appointments need of the turns module: a
// turn admitted for a checked-in appointment, and its cancellation when
// the appointment is cancelled. turns.Service provides it.
type Line interface {
	Admit(ctx context.Context, accountID, runID string, a turns.Admission) (turns.Turn, error)
	CancelFor(ctx context.Context, accountID, turnID, reason string) (turns.View, error)
}

// Watcher hears an appointment change inside the change's unit of work:
// a booking (before is the zero Appointment, its Status "") and every
// lifecycle step (cancel, check-in, start, complete, no-show). Its error
// rolls the change back. The notifications module watches to schedule an
// appointment's reminder with its booking and to drop it when the
// appointment moves on.
//
// The steps a HYBRID appointment's turn makes (TurnChanged) are not
// watched: the appointment was checked in before it had a turn, and
// nothing a watcher needs changes after that.
type Watcher interface {
	AppointmentChanged(ctx context.Context, q queues.Queue, before, after Appointment) error
}
