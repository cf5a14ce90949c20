package queues

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
)

// The payloads of the queue events of spec section 6, one type per event,
// each naming its event (EventName) and listed in core/events' registry;
// their JSON is the event's data, marshalled once when it is raised.

// RunFields is what the data of every queue event carries: the run and its
// queue. Fields are in the byte order of their JSON names (see
// turns.TurnFields).
type RunFields struct {
	QueueID    string `json:"queueId"`
	QueueName  string `json:"queueName"`
	QueueRunID string `json:"queueRunId"`
	Status     string `json:"status"`
}

// QueueOpened is the data of queue.opened: a run of the queue opened.
type QueueOpened struct {
	RunFields
}

// EventName names the event: queue.opened.
func (QueueOpened) EventName() string { return "queue.opened" }

// QueueClosed is the data of queue.closed: a run of the queue closed.
type QueueClosed struct {
	RunFields
}

// EventName names the event: queue.closed.
func (QueueClosed) EventName() string { return "queue.closed" }

// runEvent is a run change's event, built from the queue and the run as
// the change leaves it.
type runEvent func(f RunFields) platform.Payload

func opened(f RunFields) platform.Payload { return QueueOpened{f} }

func closed(f RunFields) platform.Payload { return QueueClosed{f} }

// emitRun raises a run's event in the caller's unit of work.
func (s *Service) emitRun(ctx context.Context, q Queue, r Run, ev runEvent) error {
	f := RunFields{QueueID: q.ID, QueueName: q.Name, QueueRunID: r.ID, Status: r.Status}
	e, err := platform.NewEvent(q.AccountID, ev(f), s.clock.Now())
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = q.ID, r.ID
	return s.events.Emit(ctx, e)
}
