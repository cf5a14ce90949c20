package turns

import (
	"fmt"
	"strings"
)

// Operation is something that changes a turn: an endpoint of spec 4.2/4.3,
// or one of the two automatic changes (tolerance expiry, promotion).
type Operation string

// Operations.
const (
	OpCreate        Operation = "create"
	OpNext          Operation = "next"
	OpCall          Operation = "call"
	OpAssignStation Operation = "assign-station"
	OpArrive        Operation = "arrive"
	OpStart         Operation = "start"
	OpComplete      Operation = "complete"
	OpNoShow        Operation = "no-show"
	OpHold          Operation = "hold"
	OpRelease       Operation = "release"
	OpCancel        Operation = "cancel"
	OpReopen        Operation = "reopen"
	OpPriority      Operation = "priority"
	OpExpire        Operation = "tolerance-expiry"
	OpPromote       Operation = "promote"
)

// Operations lists the operations in the order the docs show them.
var Operations = []Operation{OpCreate, OpNext, OpCall, OpAssignStation, OpArrive, OpStart, OpComplete,
	OpNoShow, OpHold, OpRelease, OpCancel, OpReopen, OpPriority, OpExpire, OpPromote}

// internalEvent is the Event of a rule the spec names no event for: the
// change raises the internal turn_state.changed (TurnStateChanged).
const internalEvent = EventStateChanged + " (internal)"

// Rule is one row of the state machine: an operation applies to a turn in
// From, moves it to To, provided Needs hold, and raises Event.
type Rule struct {
	Op   Operation
	From Status // "" for create: the turn does not exist yet
	// To is where the turn goes: a status, "same", or alternatives split
	// by "/"; Note says which and how, when there is more to say.
	To    string
	Note  string
	Needs string
	Event string
}

// Rules is the turn state machine. Every operation that finds a turn in a
// status without a rule here is refused with INVALID_TRANSITION; a test
// drives every (operation, status) pair against it, and docs/turns.md is
// generated from it.
var Rules = []Rule{
	{OpCreate, "", "WAITING/WAITLISTED", "WAITLISTED while anyone is on the waitlist, or when capacity.maxTurns active turns exist, with waitlistEnabled",
		"run open (else QUEUE_CLOSED) and intake open (else INTAKE_CLOSED); inside opening hours when the schedule is weekly, unless allowOutsideHours (else OUTSIDE_OPENING_HOURS); under capacity.maxTurns active turns, or waitlistEnabled (else CAPACITY_REACHED); answers match the questions; every IntakeGuard passes",
		"turn.created"},

	{OpNext, Waiting, "CALLED/IN_SERVICE", "IN_SERVICE when callOnNext is off and trackService on: the turn is served at once, without a call",
		"run open; the first WAITING turn in line order (priority, then arrival); the station, if given, of the run's queue and free",
		"turn.called"},

	{OpCall, Waiting, "CALLED", "out of line order", "run open; the station (given, else the one assigned) of the queue and free", "turn.called"},
	{OpCall, Held, "CALLED", "", "as from WAITING", "turn.called"},
	{OpCall, Called, "CALLED", "called again: a new call, a new tolerance timer", "as from WAITING", "turn.called"},

	{OpAssignStation, Waitlisted, "same", "", "a station of the queue, or null to clear", internalEvent},
	{OpAssignStation, Waiting, "same", "the turn keeps its place; next may still call it to another station", "a station of the queue, or null to clear", internalEvent},
	{OpAssignStation, Held, "same", "", "a station of the queue, or null to clear", internalEvent},
	{OpAssignStation, Called, "same", "", "a station of the queue and free, or null to clear", internalEvent},
	{OpAssignStation, InService, "same", "", "a station of the queue and free, or null to clear", internalEvent},

	{OpArrive, Waitlisted, "same", "arrivedAt set (once)", "", internalEvent},
	{OpArrive, Waiting, "same", "arrivedAt set (once)", "", internalEvent},
	{OpArrive, Held, "same", "arrivedAt set (once)", "", internalEvent},
	{OpArrive, Called, "same", "arrivedAt set (once); tolerance no longer expires the call", "", internalEvent},
	{OpArrive, NoShow, "WAITING/WAITLISTED", "a re-entry: at the end of its priority; WAITLISTED, as a new turn would be, while anyone is on the waitlist or at capacity, with waitlistEnabled",
		"run open; tolerance.allowReentry (else REENTRY_NOT_ALLOWED); reentries < tolerance.maxReentries (else REENTRY_LIMIT_REACHED)", internalEvent},

	{OpStart, Called, "IN_SERVICE", "arrivedAt set if it was not", "dispatchFlow.trackService on (else SERVICE_NOT_TRACKED)", internalEvent},

	{OpComplete, InService, "COMPLETED", "the service time feeds the wait estimate", "", "turn.completed"},
	{OpComplete, Called, "COMPLETED", "", "dispatchFlow.trackService off (on: start it first)", "turn.completed"},

	{OpNoShow, Called, "NO_SHOW", "", "", internalEvent},

	{OpHold, Waiting, "HELD", "keeps its place for release", "", internalEvent},
	{OpHold, Called, "HELD", "frees the station; keeps its place at the head of the line for release", "", internalEvent},

	{OpRelease, Held, "WAITING", "back in its place when staff held it while waiting; at the head of its priority when staff held it after a call (the next one called); when tolerance expiry held it, a re-entry at the end of its priority",
		"run open; a re-entry needs tolerance.allowReentry (else REENTRY_NOT_ALLOWED) and reentries < tolerance.maxReentries (else REENTRY_LIMIT_REACHED)", internalEvent},
	{OpRelease, Waitlisted, "WAITING", "promoted by hand, whatever its place on the waitlist", "run open; fewer than capacity.maxTurns active turns (else CAPACITY_REACHED)", internalEvent},

	{OpCancel, Waitlisted, "CANCELLED", "", "", "turn.cancelled"},
	{OpCancel, Waiting, "CANCELLED", "", "", "turn.cancelled"},
	{OpCancel, Held, "CANCELLED", "", "", "turn.cancelled"},
	{OpCancel, Called, "CANCELLED", "", "", "turn.cancelled"},
	{OpCancel, InService, "CANCELLED", "", "", "turn.cancelled"},

	{OpReopen, Completed, "IN_SERVICE/CALLED", "the status it was completed from",
		"dispatchFlow.allowReopen (else REOPEN_NOT_ALLOWED); at most 5 minutes after it finished (else REOPEN_WINDOW_EXPIRED); run open; its station free", "turn.reopened"},
	{OpReopen, NoShow, "CALLED", "", "as from COMPLETED", "turn.reopened"},
	{OpReopen, Cancelled, "its status before", "the status it was cancelled from; back in its place if that was WAITING, back on the waitlist if it was WAITLISTED (then promoted when there is room)",
		"as from COMPLETED; an undo needs no room under capacity.maxTurns", "turn.reopened"},

	{OpPriority, Waitlisted, "same", "new priority", "a PRIORITY", internalEvent},
	{OpPriority, Waiting, "same", "new priority; it keeps its arrival, so it sits among the turns of its new priority by arrival", "a PRIORITY", internalEvent},
	{OpPriority, Held, "same", "new priority", "a PRIORITY", internalEvent},

	{OpExpire, Called, "NO_SHOW/CANCELLED/HELD/same", "per dispatchFlow.onToleranceExpired: no_show, cancel, hold, none",
		"the job of this very call (callCount); the turn has neither arrived nor started", "turn.cancelled when cancel; " + internalEvent + " when no_show or hold; none when none"},

	{OpPromote, Waitlisted, "WAITING", "automatic, first in line order, as room frees (before any new turn is admitted)", "capacity.autoPromote; run open; fewer than capacity.maxTurns active turns", internalEvent},
}

// applies reports whether op has a rule for a turn in status from.
func applies(op Operation, from Status) bool {
	for _, r := range Rules {
		if r.Op == op && r.From == from {
			return true
		}
	}
	return false
}

// check refuses op on t unless a rule allows it.
func check(t Turn, op Operation) error {
	if !applies(op, t.Status) {
		return invalidTransition(t, op, "")
	}
	return nil
}

// StateTable renders the state machine as the Markdown of docs/turns.md:
// a matrix of every status by every operation, then every rule with what
// it needs and the event it raises.
func StateTable() string {
	var b strings.Builder
	b.WriteString("| status \\ operation |")
	for _, op := range Operations[1:] {
		fmt.Fprintf(&b, " %s |", op)
	}
	b.WriteString("\n|---|")
	for range Operations[1:] {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, st := range Statuses {
		fmt.Fprintf(&b, "| %s |", st)
		for _, op := range Operations[1:] {
			cell := "—"
			for _, r := range Rules {
				if r.Op == op && r.From == st {
					cell = "→ " + r.To
					break
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| operation | from | to | how | needs | event |\n|---|---|---|---|---|---|\n")
	for _, r := range Rules {
		from := string(r.From)
		if from == "" {
			from = "(new)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Op, from, r.To, dash(r.Note), dash(r.Needs), dash(r.Event))
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
