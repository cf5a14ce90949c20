package appointments

import (
	"sort"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Status is where an appointment stands in its lifecycle.
type Status string

// Statuses. COMPLETED, CANCELLED and NO_SHOW are final.
const (
	StatusScheduled Status = "SCHEDULED"
	StatusCheckedIn Status = "CHECKED_IN"
	StatusInService Status = "IN_SERVICE"
	StatusCompleted Status = "COMPLETED"
	StatusCancelled Status = "CANCELLED"
	StatusNoShow    Status = "NO_SHOW"
)

// Statuses lists every status, in lifecycle order.
var Statuses = []string{
	string(StatusScheduled), string(StatusCheckedIn), string(StatusInService),
	string(StatusCompleted), string(StatusCancelled), string(StatusNoShow),
}

// Action is an operation of the lifecycle (POST /appointments/{id}/<action>).
type Action string

// Actions.
const (
	ActionCancel   Action = "cancel"
	ActionCheckIn  Action = "check-in"
	ActionStart    Action = "start"
	ActionComplete Action = "complete"
	ActionNoShow   Action = "no-show"
)

// transitions is the state machine, the table of docs/appointments.md:
// for each action, the statuses it is allowed from and the status it
// leads to. Anything else is INVALID_TRANSITION.
var transitions = map[Action]struct {
	from []Status
	to   Status
}{
	ActionCancel:   {from: []Status{StatusScheduled, StatusCheckedIn}, to: StatusCancelled},
	ActionCheckIn:  {from: []Status{StatusScheduled}, to: StatusCheckedIn},
	ActionStart:    {from: []Status{StatusScheduled, StatusCheckedIn}, to: StatusInService},
	ActionComplete: {from: []Status{StatusInService}, to: StatusCompleted},
	ActionNoShow:   {from: []Status{StatusScheduled, StatusCheckedIn}, to: StatusNoShow},
}

// Next returns the status action leads to from s, or INVALID_TRANSITION
// with details naming the current status, the action and the statuses it
// is allowed from.
func (s Status) Next(action Action) (Status, error) {
	t, ok := transitions[action]
	if !ok {
		return s, platform.NewError(platform.KindInternal, platform.CodeInternal, "unknown action "+string(action), nil)
	}
	for _, f := range t.from {
		if f == s {
			return t.to, nil
		}
	}
	allowed := make([]string, len(t.from))
	for i, f := range t.from {
		allowed[i] = string(f)
	}
	sort.Strings(allowed)
	return s, platform.Conflict(CodeInvalidTransition,
		"cannot "+string(action)+" an appointment that is "+string(s),
		map[string]any{"status": string(s), "action": string(action), "allowedFrom": allowed})
}

// Final reports whether no action leads anywhere from s.
func (s Status) Final() bool {
	return s == StatusCompleted || s == StatusCancelled || s == StatusNoShow
}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if string(s) == v {
			return true
		}
	}
	return false
}

// apply moves a to its new status at now and stamps the matching time.
// Starting without a check-in counts as the arrival too.
func (a *Appointment) apply(to Status, now time.Time) {
	a.Status, a.UpdatedAt = to, now
	if to != StatusCheckedIn {
		a.JoinsLineAt = nil // served, cancelled or gone: it no longer joins
	}
	switch to {
	case StatusCheckedIn:
		a.CheckedInAt = &now
	case StatusInService:
		if a.CheckedInAt == nil {
			a.CheckedInAt = &now
		}
		a.StartedAt = &now
	case StatusCompleted:
		a.CompletedAt = &now
	case StatusCancelled:
		a.CancelledAt = &now
	case StatusNoShow:
		a.NoShowAt = &now
	}
}
