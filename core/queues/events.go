package queues

import (
	"context"
	"fmt"

	"github.com/qms-dev/qms/core/platform"
)

// The payloads of the queue events of spec section 6, one type per event;
// their JSON is the event's data, marshalled once when it is raised.
// Fields are declared in the byte order of their JSON names, the order of
// the earlier map payloads, so the bytes sent stay as they were.

// QueueOpened is the data of queue.opened: a run of the queue opened.
type QueueOpened struct {
	QueueID    string `json:"queueId"`
	QueueName  string `json:"queueName"`
	QueueRunID string `json:"queueRunId"`
	Status     string `json:"status"`
}

// QueueClosed is the data of queue.closed: a run of the queue closed.
type QueueClosed struct {
	QueueID    string `json:"queueId"`
	QueueName  string `json:"queueName"`
	QueueRunID string `json:"queueRunId"`
	Status     string `json:"status"`
}

func (s *Service) emitRun(ctx context.Context, name string, q Queue, r Run) error {
	var payload any
	switch name {
	case platform.EventQueueOpened:
		payload = QueueOpened{QueueID: q.ID, QueueName: q.Name, QueueRunID: r.ID, Status: r.Status}
	case platform.EventQueueClosed:
		payload = QueueClosed{QueueID: q.ID, QueueName: q.Name, QueueRunID: r.ID, Status: r.Status}
	default:
		return fmt.Errorf("queues: %s is not a queue event", name)
	}
	e, err := platform.NewEvent(q.AccountID, name, payload, s.clock.Now())
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = q.ID, r.ID
	return s.events.Emit(ctx, e)
}
