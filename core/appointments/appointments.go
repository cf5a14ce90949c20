// Package appointments is the appointment domain (spec 2.4, 2.5, 4.4):
// the time slots of a run, generated per day in the queue's time zone, and
// the appointments booked into them with their own lifecycle.
//
// Capacity is a counter on the slot: booking takes one seat with a
// conditional decrement that never goes below zero, cancelling gives it
// back. The repository owns that atomicity (a conditional UPDATE on
// Postgres, the serialised unit of work in memory); the service decides
// everything else.
package appointments

import (
	"regexp"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Codes raised by this module. docs/appointments.md lists them with their
// statuses.
const (
	// CodeQueueTypeMismatch: slots and appointments on a TURN queue (409).
	CodeQueueTypeMismatch = "QUEUE_TYPE_MISMATCH"
	// CodeSlotOverlap: generated slots would overlap slots of the run (409).
	CodeSlotOverlap = "SLOT_OVERLAP"
	// CodeSlotDateInPast: generating slots for a day that is over (422).
	CodeSlotDateInPast = "SLOT_DATE_IN_PAST"
	// CodeSlotNotFound: slotId names no slot of the run (422).
	CodeSlotNotFound = "SLOT_NOT_FOUND"
	// CodeSlotFull: the slot has no remaining capacity (409).
	CodeSlotFull = "SLOT_FULL"
	// CodeSlotStarted: the slot has already started, it takes no bookings (422).
	CodeSlotStarted = "SLOT_STARTED"
	// CodeNoSlotAvailable: no slot of the run that has not started has room (409).
	CodeNoSlotAvailable = "NO_SLOT_AVAILABLE"
	// CodeIdempotencyKeyReused: the key was used for a different booking (409).
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	// CodeInvalidTransition: the operation is not allowed from the current
	// status (409, details.status).
	CodeInvalidTransition = "INVALID_TRANSITION"
	// CodeCancellationTooLate: the cancel comes later than the queue's
	// cancellation.minNoticeMinutes before the slot starts (422).
	CodeCancellationTooLate = "CANCELLATION_TOO_LATE"
	// CodeSlotNotStarted: a no-show before the slot has started (409).
	CodeSlotNotStarted = "SLOT_NOT_STARTED"
	// CodeInLine: start, complete or no-show of an appointment that stands
	// in a HYBRID line as a turn: dispatch the turn instead (409).
	CodeInLine = "APPOINTMENT_IN_LINE"
	// CodeAppointmentCancelled: a turn of a cancelled appointment cannot
	// come back (reopen): the appointment's cancellation is final (409).
	CodeAppointmentCancelled = "APPOINTMENT_CANCELLED"
)

// Slot is a bookable time window of a run. Start and End are instants
// (UTC on the wire); Date and Timezone say which local day of the queue
// generated it.
type Slot struct {
	ID        string    `json:"id"`
	AccountID string    `json:"-"`
	QueueID   string    `json:"queueId"`
	RunID     string    `json:"queueRunId"`
	Date      string    `json:"date"`
	Timezone  string    `json:"timezone"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Capacity  int       `json:"capacity"`
	Remaining int       `json:"remaining"`
	CreatedAt time.Time `json:"createdAt"`
}

// Bookable reports whether the slot takes a booking at now: it has room
// and has not started.
func (s Slot) Bookable(now time.Time) bool { return s.Remaining > 0 && s.Start.After(now) }

// SlotBatch is the answer to a generation: the slots made for one day.
type SlotBatch struct {
	RunID    string `json:"queueRunId"`
	Date     string `json:"date"`
	Timezone string `json:"timezone"`
	Slots    []Slot `json:"slots"`
}

// Appointment is a booking of one seat of a slot.
type Appointment struct {
	ID           string    `json:"id"`
	AccountID    string    `json:"-"`
	QueueID      string    `json:"queueId"`
	RunID        string    `json:"queueRunId"`
	SlotID       string    `json:"slotId"`
	SlotStart    time.Time `json:"slotStart"`
	SlotEnd      time.Time `json:"slotEnd"`
	Date         string    `json:"date"`
	Status       Status    `json:"status"`
	CustomerName *string   `json:"customerName"`
	Phone        *string   `json:"phone"`
	// NotifyWhatsapp and Language are how the customer wants the
	// reminder (docs/notifications.md): WhatsApp rather than SMS, and in
	// which of the screens' languages (null: the queue's).
	NotifyWhatsapp bool              `json:"notifyWhatsapp"`
	Language       *string           `json:"language"`
	Notes          *string           `json:"notes"`
	FormResponse   map[string]string `json:"formResponse"`
	CreatedAt      time.Time         `json:"createdAt"`
	UpdatedAt      time.Time         `json:"updatedAt"`
	CheckedInAt    *time.Time        `json:"checkedInAt"`
	StartedAt      *time.Time        `json:"startedAt"`
	CompletedAt    *time.Time        `json:"completedAt"`
	CancelledAt    *time.Time        `json:"cancelledAt"`
	NoShowAt       *time.Time        `json:"noShowAt"`
	// TurnID is the turn a checked-in appointment of a HYBRID queue stands
	// in the line as, from its effective join time (the later of its
	// slot's start and its check-in); null before, and in other queues.
	TurnID *string `json:"turnId"`
	// JoinsLineAt is set while a checked-in appointment of a HYBRID queue
	// is not in the line yet: when it joins (its slot's start, when
	// checked in early). Past it, the appointment is waiting to join
	// because the run is closed: it joins when the run opens again. Null
	// once in the line, and in every other case.
	JoinsLineAt *time.Time `json:"joinsLineAt"`

	// IdempotencyKey and RequestHash identify the booking request that made
	// the appointment, so a repeat finds it and a different request with the
	// same key is told apart. Neither is shown.
	IdempotencyKey *string `json:"-"`
	RequestHash    string  `json:"-"`
}

// GenerateInput is the slot generation body (spec 2.4); every field is
// required.
type GenerateInput struct {
	Date        *string `json:"date"`
	StartTime   *string `json:"startTime"`
	EndTime     *string `json:"endTime"`
	SlotMinutes *int    `json:"slotMinutes"`
	Capacity    *int    `json:"capacity"`
}

// LastSlotDate is the last day slots can be generated for.
var LastSlotDate = time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)

// Validate checks every bound of spec 2.4, that endTime is after startTime
// and that the window holds at least one slot, and reports every failure.
func (in *GenerateInput) Validate() error {
	var v platform.Validator
	if v.Required("date", in.Date != nil) {
		// The last day whose slots are instants of year 9999 in every
		// zone (UTC-12 to UTC+14): later ones could not be written in the
		// answers (RFC 3339), a 500 before issue 23.
		if d, ok := v.Date("date", *in.Date); ok && d.After(LastSlotDate) {
			v.Fail("date", "range", "must be a date up to %s", LastSlotDate.Format(time.DateOnly))
		}
	}
	okStart := v.Required("startTime", in.StartTime != nil) && v.ClockTime("startTime", *in.StartTime)
	okEnd := v.Required("endTime", in.EndTime != nil) && v.ClockTime("endTime", *in.EndTime)
	okMinutes := false
	if v.Required("slotMinutes", in.SlotMinutes != nil) {
		n := len(v.Fields())
		v.Range("slotMinutes", *in.SlotMinutes, 1, 480)
		okMinutes = len(v.Fields()) == n
	}
	if v.Required("capacity", in.Capacity != nil) {
		v.Range("capacity", *in.Capacity, 1, 1000)
	}
	if okStart && okEnd {
		start, end := clockMinutes(*in.StartTime), clockMinutes(*in.EndTime)
		switch {
		case end <= start:
			v.Fail("endTime", "after_start", "must be after startTime")
		case okMinutes && end-start < *in.SlotMinutes:
			v.Fail("slotMinutes", "window", "must fit at least once between startTime and endTime (%d minutes)", end-start)
		}
	}
	return v.Err()
}

// ScheduleInput is the booking body (spec 2.5). Every field is optional:
// without slotId (or with null) the appointment goes into the earliest slot
// with room that has not started.
type ScheduleInput struct {
	SlotID         *string           `json:"slotId"`
	IdempotencyKey *string           `json:"idempotencyKey"`
	CustomerName   *string           `json:"customerName" text:"name"`
	Phone          *string           `json:"phone"`
	NotifyWhatsapp *bool             `json:"notifyWhatsapp"`
	Language       *string           `json:"language"`
	Notes          *string           `json:"notes" text:"free"`
	FormResponse   map[string]string `json:"formResponse" text:"free"`
}

// phoneRE is the phone shape used across the API: an optional +, a digit,
// then digits, spaces or hyphens; its length (8-20) is checked apart.
var phoneRE = regexp.MustCompile(`^\+?[0-9][0-9 \-]*$`)

// validate checks the fields that do not depend on the queue; the answers
// are checked against the queue's questions by the service.
func (in *ScheduleInput) validate(v *platform.Validator) {
	v.OptLen("slotId", in.SlotID, 1, 128)
	v.OptLen("idempotencyKey", in.IdempotencyKey, 8, 120)
	v.OptLen("customerName", in.CustomerName, 1, 120)
	if in.Phone != nil {
		v.Len("phone", *in.Phone, 8, 20)
		if !phoneRE.MatchString(*in.Phone) {
			v.Fail("phone", "pattern", "must be an optional +, a digit, then digits, spaces or hyphens")
		}
	}
	if in.Language != nil {
		v.OneOf("language", *in.Language, Languages...)
	}
	v.OptLen("notes", in.Notes, 0, 500)
}

// Languages are the reminder's languages: the screens' four.
var Languages = []string{"en", "es", "pt", "fr"}

// SlotFilter narrows a slot listing.
type SlotFilter struct {
	// Available keeps the bookable slots only: room left and not started
	// at Now.
	Available bool
	Now       time.Time
	// Date, when set (YYYY-MM-DD), keeps the slots generated for that
	// local day.
	Date string
}

// ListFilter narrows an appointment listing.
type ListFilter struct {
	Status Status // empty: every status
	Date   string // empty: every day; else YYYY-MM-DD, the slot's local day
}

// clockMinutes reads a checked HH:MM as minutes after midnight.
func clockMinutes(s string) int {
	return int(s[0]-'0')*600 + int(s[1]-'0')*60 + int(s[3]-'0')*10 + int(s[4]-'0')
}
