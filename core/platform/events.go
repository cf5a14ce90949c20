package platform

import (
	"encoding/json"
	"fmt"
	"time"
)

// Payload is an event's data. Its type declares the event's name, as
// River's JobArgs declare their kind: turns.TurnCalled{}.EventName() is
// "turn.called". Every payload type is listed once, in core/events'
// registry; core/events' tests check that each one is.
type Payload interface {
	EventName() string
}

// EventName is the name of the events whose payload type is P, for
// comparing an event's name without building a payload:
// e.Name == platform.EventName[turns.TurnCompleted]().
func EventName[P Payload]() string {
	var p P
	return p.EventName()
}

// Event is a domain event: something that happened to an account's
// resource.
//
// Data is the JSON of the event's payload, a struct owned by the core that
// raises the event (turns.TurnCalled, queues.QueueClosed, ...). It is
// marshalled once, by NewEvent, and every reader sees those bytes: the
// webhook body, the stream, the log, in memory and PostgreSQL mode alike.
// Subscribers decode it into the payload type with Decode.
type Event struct {
	ID         string
	AccountID  string
	Name       string
	QueueID    string
	RunID      string
	Data       json.RawMessage
	OccurredAt time.Time
}

// NewEvent builds an event of the account, named by its payload's type,
// with the payload's JSON as its data and a fresh id. The caller sets
// QueueID and RunID.
func NewEvent(accountID string, payload Payload, at time.Time) (Event, error) {
	name := payload.EventName()
	data, err := json.Marshal(payload)
	if err != nil {
		return Event{}, fmt.Errorf("platform: encode %s data: %w", name, err)
	}
	return Event{ID: NewID(PrefixEvent), AccountID: accountID, Name: name, Data: data, OccurredAt: at}, nil
}

// Decode reads e's data into v, a pointer to the payload type of the
// event.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("platform: decode %s %s data: %w", e.Name, e.ID, err)
	}
	return nil
}

// DecodeAs reads e's data into P's type when e is an event of P's name;
// for any other event ok is false and nothing is decoded.
func DecodeAs[P Payload](e Event) (p P, ok bool, err error) {
	if e.Name != p.EventName() {
		return p, false, nil
	}
	return p, true, e.Decode(&p)
}

// DataOrEmpty is e's data, or the empty object when the event has none.
func (e Event) DataOrEmpty() json.RawMessage {
	if len(e.Data) == 0 {
		return json.RawMessage("{}")
	}
	return e.Data
}
