package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Event names of spec section 6.
const (
	EventTurnCreated          = "turn.created"
	EventTurnCalled           = "turn.called"
	EventTurnCompleted        = "turn.completed"
	EventTurnCancelled        = "turn.cancelled"
	EventTurnReopened         = "turn.reopened"
	EventQueueOpened          = "queue.opened"
	EventQueueClosed          = "queue.closed"
	EventAppointmentScheduled = "appointment.scheduled"
	EventAppointmentCompleted = "appointment.completed"

	// Beyond section 6 (compatible additions, docs/queues.md): help on
	// the ticket page, and a turn waiting past its queue's SLA.
	EventTurnHelpRequested = "turn.help_requested"
	EventTurnHelpAnswered  = "turn.help_answered"
	EventTurnSLABreached   = "turn.sla_breached"
	// EventNotificationStatus is not of spec section 6 either: a customer
	// message (core/notify) changed status (docs/notifications.md).
	EventNotificationStatus = "notification.status"
)

// EventNames lists every event a webhook endpoint can subscribe to.
var EventNames = []string{
	EventTurnCreated, EventTurnCalled, EventTurnCompleted, EventTurnCancelled, EventTurnReopened,
	EventQueueOpened, EventQueueClosed, EventAppointmentScheduled, EventAppointmentCompleted,
	EventTurnHelpRequested, EventTurnHelpAnswered, EventTurnSLABreached,
	EventNotificationStatus,
}

// IsEventName reports whether name is an event of spec section 6.
func IsEventName(name string) bool {
	for _, n := range EventNames {
		if n == name {
			return true
		}
	}
	return false
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

// NewEvent builds an event of the account named name with payload's JSON
// as its data and a fresh id. The caller sets QueueID and RunID.
func NewEvent(accountID, name string, payload any, at time.Time) (Event, error) {
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

// DataOrEmpty is e's data, or the empty object when the event has none.
func (e Event) DataOrEmpty() json.RawMessage {
	if len(e.Data) == 0 {
		return json.RawMessage("{}")
	}
	return e.Data
}

// EventSink records domain events. Emit must be called with a context inside
// a UnitOfWork: the event commits or rolls back with the change that raised
// it.
type EventSink interface {
	Emit(ctx context.Context, e Event) error
}
