// Package turns is the turns and dispatch domain (spec 2.3, 3, 4.2, 4.3):
// taking a turn in a queue run, its place in the line and wait estimate, and
// the dispatch lifecycle from call to completion, with tolerance expiry.
//
// The state machine is the table in transitions.go; docs/turns.md is
// generated from the same table (a test keeps them equal).
package turns

import (
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Status is where a turn is in its lifecycle. Names are uppercase, like the
// spec's WAITING, CALLED and COMPLETED.
type Status string

// Turn statuses.
const (
	// Waitlisted: over capacity.maxTurns with waitlistEnabled; not in the
	// line yet, promoted to WAITING as room frees.
	Waitlisted Status = "WAITLISTED"
	// Waiting: in the line; dispatch/next takes these, in line order.
	Waiting Status = "WAITING"
	// Held: set aside; skipped by dispatch/next until released.
	Held Status = "HELD"
	// Called: summoned to a station (or to the counter, without one).
	Called Status = "CALLED"
	// InService: being served (dispatchFlow.trackService).
	InService Status = "IN_SERVICE"
	// Completed: served. Finished.
	Completed Status = "COMPLETED"
	// NoShow: called, and did not come. Finished.
	NoShow Status = "NO_SHOW"
	// Cancelled: cancelled by staff or by tolerance expiry. Finished.
	Cancelled Status = "CANCELLED"
)

// Statuses lists every status, in lifecycle order.
var Statuses = []Status{Waitlisted, Waiting, Held, Called, InService, Completed, NoShow, Cancelled}

// Valid reports whether s is a status.
func (s Status) Valid() bool {
	for _, x := range Statuses {
		if x == s {
			return true
		}
	}
	return false
}

// Active reports whether a turn in this status counts against
// capacity.maxTurns: admitted and not finished.
func (s Status) Active() bool {
	return s == Waiting || s == Held || s == Called || s == InService
}

// Finished reports whether the turn is over (reopen may bring it back).
func (s Status) Finished() bool { return s == Completed || s == NoShow || s == Cancelled }

// AtStation reports whether a turn in this status occupies its station: a
// station serves one turn at a time.
func (s Status) AtStation() bool { return s == Called || s == InService }

// Turn is a turn as stored. JSON tags are the wire names of the turn view.
type Turn struct {
	ID          string          `json:"id"`
	AccountID   string          `json:"-"`
	QueueID     string          `json:"queueId"`
	RunID       string          `json:"queueRunId"`
	Number      int             `json:"number"`
	DisplayCode string          `json:"displayCode"`
	Status      Status          `json:"status"`
	Priority    queues.Priority `json:"priority"`
	// Seq orders arrival within the run: the line is (priority rank, Seq).
	Seq            int64             `json:"-"`
	PeopleCount    int               `json:"peopleCount"`
	Phone          *string           `json:"phone"`
	NotifyWhatsapp bool              `json:"notifyWhatsapp"`
	FormResponse   map[string]string `json:"formResponse"`
	StationID      *string           `json:"stationId"`
	// CallCount counts the calls; a tolerance job acts only on the call
	// that scheduled it.
	CallCount int `json:"callCount"`
	// Reentries counts returns to the line after a missed call
	// (tolerance.maxReentries bounds it).
	Reentries int `json:"reentries"`
	// HeldFrom says how a HELD turn got there (HeldWhileWaiting,
	// HeldAfterCall, HeldByExpiry): release puts it back in its place,
	// except after a tolerance expiry, which makes release a re-entry.
	HeldFrom string `json:"-"`
	// ReopenTo is the status a finished turn had before it finished, which
	// reopen restores.
	ReopenTo Status `json:"-"`
	// ServiceSeconds is how long the service took, set on completion; the
	// wait estimate averages it.
	ServiceSeconds *float64 `json:"-"`
	// IdempotencyKey and RequestHash let a repeated create return this turn.
	IdempotencyKey *string    `json:"-"`
	RequestHash    string     `json:"-"`
	ArrivedAt      *time.Time `json:"arrivedAt"`
	CalledAt       *time.Time `json:"calledAt"`
	StartedAt      *time.Time `json:"startedAt"`
	FinishedAt     *time.Time `json:"finishedAt"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	// AppointmentID links the turn of a checked-in appointment of a HYBRID
	// queue to it: the appointment stands in the line as this turn, and
	// follows its changes (Follower).
	AppointmentID *string `json:"appointmentId"`
}

// How a turn came to be HELD (Turn.HeldFrom).
const (
	HeldWhileWaiting = "WAITING"
	HeldAfterCall    = "CALLED"
	HeldByExpiry     = "EXPIRED"
)

// Rank is the turn's priority rank: lower is served first.
func (t Turn) Rank() int { return t.Priority.Rank() }

// LineKey is a waiting turn's place in the line: priority rank, then
// arrival.
type LineKey struct {
	Rank int
	Seq  int64
}

// Less orders keys the way dispatch/next takes turns.
func (k LineKey) Less(o LineKey) bool {
	if k.Rank != o.Rank {
		return k.Rank < o.Rank
	}
	return k.Seq < o.Seq
}

// Key returns the turn's line key.
func (t Turn) Key() LineKey { return LineKey{Rank: t.Rank(), Seq: t.Seq} }

// View is the full turn read (spec 2.1: "status, position, wait estimate
// and queue data").
type View struct {
	Turn
	// Position is 1-based among the turns dispatch/next would take: 1 is
	// called next. Null when the turn is not WAITING.
	Position *int `json:"position"`
	// WaitEstimate is null when the turn is not WAITING.
	WaitEstimate *WaitEstimate `json:"waitEstimate"`
	Queue        QueueRef      `json:"queue"`
	Station      *StationRef   `json:"station"`
}

// QueueRef is the queue data of a turn view.
type QueueRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// StationRef is the assigned station of a turn view.
type StationRef struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// WaitEstimate is how long a waiting turn should wait before it is called.
type WaitEstimate struct {
	Seconds int `json:"seconds"`
	// Minutes is Seconds rounded up, for display.
	Minutes int `json:"minutes"`
	// Basis is "history" when recent service times were observed in the
	// queue, "default" when there were none (DefaultServiceTime applies).
	Basis string `json:"basis"`
	// AverageServiceSeconds is the per-turn service time used.
	AverageServiceSeconds int `json:"averageServiceSeconds"`
	// Servers is how many stations (or dispatchers) share the line.
	Servers int `json:"servers"`
	// Range is the likely spread of the wait (waitrange.go); null until
	// the queue has MinRangeSamples measured service times.
	Range *WaitRange `json:"range"`
}

// Codes raised by this module. Business conflicts are 409, except where a
// request names something that cannot be used (422).
const (
	// CodeQueueClosed: the run is closed (spec 7). 409.
	CodeQueueClosed = "QUEUE_CLOSED"
	// CodeIntakeClosed: the run is open but its intake is closed; pending
	// turns are still served. 409.
	CodeIntakeClosed = "INTAKE_CLOSED"
	// CodeOutsideHours: weekly schedule, outside the opening hours. 409.
	CodeOutsideHours = "OUTSIDE_OPENING_HOURS"
	// CodeCapacityReached: capacity.maxTurns active turns and no waitlist. 409.
	CodeCapacityReached = "CAPACITY_REACHED"
	// CodeIdempotencyKeyReused: the key was used with another body. 409.
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	// CodeInvalidTransition: the operation does not apply to the turn's
	// status; details name both. 409.
	CodeInvalidTransition = "INVALID_TRANSITION"
	// CodeNoWaitingTurns: dispatch/next on a run with nobody to call. 409.
	CodeNoWaitingTurns = "NO_WAITING_TURNS"
	// CodeStationNotInQueue: the station is not one of the run's queue. 422.
	CodeStationNotInQueue = queues.CodeStationNotInRun
	// CodeStationBusy: the station already has a called or in-service
	// turn. 409.
	CodeStationBusy = queues.CodeStationBusy
	// CodeServiceNotTracked: start with dispatchFlow.trackService off. 409.
	CodeServiceNotTracked = "SERVICE_NOT_TRACKED"
	// CodeReopenNotAllowed: reopen with dispatchFlow.allowReopen off. 409.
	CodeReopenNotAllowed = "REOPEN_NOT_ALLOWED"
	// CodeReopenWindowExpired: reopen more than 5 minutes after the turn
	// finished. 409.
	CodeReopenWindowExpired = "REOPEN_WINDOW_EXPIRED"
	// CodeReentryNotAllowed: tolerance.allowReentry is off. 409.
	CodeReentryNotAllowed = "REENTRY_NOT_ALLOWED"
	// CodeReentryLimitReached: the turn used its tolerance.maxReentries. 409.
	CodeReentryLimitReached = "REENTRY_LIMIT_REACHED"
	// CodeNotATurnQueue: turns taken in an APPOINTMENT queue. 422.
	CodeNotATurnQueue = "NOT_A_TURN_QUEUE"
	// CodeWhatsappCaptureDisabled: phone or notifyWhatsapp given to a
	// queue with whatsappCapture off. 422.
	CodeWhatsappCaptureDisabled = "WHATSAPP_CAPTURE_DISABLED"
)

// ReopenWindow is how long after finishing a turn can be reopened (spec 8).
const ReopenWindow = 5 * time.Minute

// invalidTransition is the INVALID_TRANSITION refusal.
func invalidTransition(t Turn, op Operation, why string) error {
	msg := "cannot " + string(op) + " a turn that is " + string(t.Status)
	if why != "" {
		msg += ": " + why
	}
	return platform.Conflict(CodeInvalidTransition, msg,
		map[string]any{"turnId": t.ID, "status": string(t.Status), "operation": string(op)})
}
