package platform

import (
	"context"
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
)

// EventNames lists every event a webhook endpoint can subscribe to.
var EventNames = []string{
	EventTurnCreated, EventTurnCalled, EventTurnCompleted, EventTurnCancelled, EventTurnReopened,
	EventQueueOpened, EventQueueClosed, EventAppointmentScheduled, EventAppointmentCompleted,
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
// resource. Data is what subscribers receive (turnId, queueRunId,
// displayCode for turns, ...).
type Event struct {
	ID         string
	AccountID  string
	Name       string
	QueueID    string
	RunID      string
	Data       map[string]any
	OccurredAt time.Time
}

// EventSink records domain events. Emit must be called with a context inside
// a UnitOfWork: the event commits or rolls back with the change that raised
// it.
type EventSink interface {
	Emit(ctx context.Context, e Event) error
}
