package turns

import (
	"context"
	"strings"

	"github.com/qms-dev/qms/core/platform"
)

// The payloads of the turn events of spec section 6, one type per event,
// each naming its event (EventName) and listed in core/events' registry.
// Their JSON is the event's data: the webhook body's data, the stream's
// data and the log's row, marshalled once when the event is raised.
//
// Every turn event carries the turn as TurnFields, embedded first, then
// what is particular to the event (docs/webhooks.md, "Event data").

// TurnFields is what the data of every turn event carries: turnId,
// queueRunId and displayCode, which the spec names, and the rest of the
// turn's identity and state, which lets subscribers act without reading
// the turn. The data of any turn event decodes into it.
//
// Its fields are in the byte order of their JSON names. Nothing depends on
// the order of a JSON object's members (RFC 8259: objects are unordered;
// a webhook's signature covers the bytes as sent, whatever their order),
// but a stable order keeps a payload's bytes the same from one release to
// the next, which makes bodies easy to compare in logs and tests.
type TurnFields struct {
	DisplayCode string  `json:"displayCode"`
	Number      int     `json:"number"`
	Priority    string  `json:"priority"`
	QueueID     string  `json:"queueId"`
	QueueRunID  string  `json:"queueRunId"`
	StationID   *string `json:"stationId"`
	Status      string  `json:"status"`
	TurnID      string  `json:"turnId"`
}

// fieldsOf is t as every turn event shows it.
func fieldsOf(t Turn) TurnFields {
	return TurnFields{DisplayCode: t.DisplayCode, Number: t.Number, Priority: string(t.Priority), QueueID: t.QueueID,
		QueueRunID: t.RunID, StationID: t.StationID, Status: string(t.Status), TurnID: t.ID}
}

// TurnCreated is the data of turn.created.
type TurnCreated struct {
	TurnFields
}

// EventName names the event: turn.created.
func (TurnCreated) EventName() string { return "turn.created" }

// TurnCalled is the data of turn.called. CallCount says which call of the
// turn this is (a recall counts).
type TurnCalled struct {
	TurnFields
	CallCount int `json:"callCount"`
}

// EventName names the event: turn.called.
func (TurnCalled) EventName() string { return "turn.called" }

// TurnCompleted is the data of turn.completed.
type TurnCompleted struct {
	TurnFields
}

// EventName names the event: turn.completed.
func (TurnCompleted) EventName() string { return "turn.completed" }

// TurnCancelled is the data of turn.cancelled: PreviousStatus is the
// status the turn was cancelled from, Reason why (tolerance_expired when
// a missed call ran out of tolerance).
type TurnCancelled struct {
	TurnFields
	PreviousStatus string `json:"previousStatus"`
	Reason         string `json:"reason"`
}

// EventName names the event: turn.cancelled.
func (TurnCancelled) EventName() string { return "turn.cancelled" }

// TurnReopened is the data of turn.reopened: PreviousStatus is the status
// the turn had finished in.
type TurnReopened struct {
	TurnFields
	PreviousStatus string `json:"previousStatus"`
}

// EventName names the event: turn.reopened.
func (TurnReopened) EventName() string { return "turn.reopened" }

// TurnStateChanged is the data of turn_state.changed, the internal event
// (core/events' internal list: never sent to a webhook endpoint or a client
// stream, no part of the API) that every committed change of a turn raises
// when it raises no event of the spec: assign-station, arrive, start,
// no-show, hold, release, priority, a promotion from the waitlist, a
// tolerance expiry that does not cancel. The screens (counter consoles,
// ticket pages, display boards) follow it as they follow the spec's
// events, so no change of a line goes unheard until the next spec event.
// It carries the turn as the spec's turn events do (TurnFields), the
// operation, and the status the turn had before it.
type TurnStateChanged struct {
	TurnFields
	Operation      string `json:"operation"`
	PreviousStatus string `json:"previousStatus"`
}

// EventName names the event: turn_state.changed.
func (TurnStateChanged) EventName() string { return "turn_state.changed" }

// EventStateChanged is the name of the internal event TurnStateChanged.
const EventStateChanged = "turn_state.changed"

// NamesTurn reports whether the event named name carries a turn whose data
// decodes into TurnFields: a turn event (IsEvent), or turn_state.changed.
func NamesTurn(name string) bool { return IsEvent(name) || name == EventStateChanged }

// stateChangedEvent is the internal event of a change that raises no
// spec event.
func stateChangedEvent(op Operation, from Status) eventData {
	return func(t Turn) platform.Payload {
		return TurnStateChanged{TurnFields: fieldsOf(t), Operation: string(op), PreviousStatus: string(from)}
	}
}

// eventData is a turn change's event: its payload built from the turn as
// it is when the change commits.
type eventData func(t Turn) platform.Payload

func createdEvent(t Turn) platform.Payload { return TurnCreated{fieldsOf(t)} }

func calledEvent(t Turn) platform.Payload {
	return TurnCalled{TurnFields: fieldsOf(t), CallCount: t.CallCount}
}

func completedEvent(t Turn) platform.Payload { return TurnCompleted{fieldsOf(t)} }

func cancelledEvent(from Status, reason string) eventData {
	return func(t Turn) platform.Payload {
		return TurnCancelled{TurnFields: fieldsOf(t), PreviousStatus: string(from), Reason: reason}
	}
}

func reopenedEvent(from Status) eventData {
	return func(t Turn) platform.Payload {
		return TurnReopened{TurnFields: fieldsOf(t), PreviousStatus: string(from)}
	}
}

// emit raises a turn's event in the caller's unit of work.
func (s *Service) emit(ctx context.Context, t Turn, ev eventData) error {
	e, err := platform.NewEvent(t.AccountID, ev(t), s.clock.Now())
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = t.QueueID, t.RunID
	return s.events.Emit(ctx, e)
}

// IsEvent reports whether name is a turn event, whose data decodes into
// TurnFields: the turn events are those named turn.* (core/events' tests
// check that every one embeds TurnFields).
func IsEvent(name string) bool { return strings.HasPrefix(name, "turn.") }
