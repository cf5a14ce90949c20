package appointments

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// The payloads of the appointment events of spec section 6, one type per
// event, each naming its event (EventName) and listed in core/events'
// registry; their JSON is the event's data, marshalled once when it is
// raised.

// AppointmentFields is what the data of every appointment event carries.
// SlotStart and SlotEnd are RFC 3339 instants, Date the slot's day in the
// queue's zone. Fields are in the byte order of their JSON names (see
// turns.TurnFields).
type AppointmentFields struct {
	AppointmentID string `json:"appointmentId"`
	Date          string `json:"date"`
	QueueID       string `json:"queueId"`
	QueueRunID    string `json:"queueRunId"`
	SlotEnd       string `json:"slotEnd"`
	SlotID        string `json:"slotId"`
	SlotStart     string `json:"slotStart"`
	Status        string `json:"status"`
}

// AppointmentScheduled is the data of appointment.scheduled.
type AppointmentScheduled struct {
	AppointmentFields
}

// EventName names the event: appointment.scheduled.
func (AppointmentScheduled) EventName() string { return "appointment.scheduled" }

// AppointmentCompleted is the data of appointment.completed.
type AppointmentCompleted struct {
	AppointmentFields
}

// EventName names the event: appointment.completed.
func (AppointmentCompleted) EventName() string { return "appointment.completed" }

// appointmentEvent is an appointment change's event, built from the
// appointment as the change leaves it.
type appointmentEvent func(f AppointmentFields) platform.Payload

func scheduled(f AppointmentFields) platform.Payload { return AppointmentScheduled{f} }

func completed(f AppointmentFields) platform.Payload { return AppointmentCompleted{f} }

// emit raises an appointment's event in the caller's unit of work.
func (s *Service) emit(ctx context.Context, a Appointment, ev appointmentEvent) error {
	return emit(ctx, s.events, a, ev)
}

func emit(ctx context.Context, sink platform.EventSink, a Appointment, ev appointmentEvent) error {
	f := AppointmentFields{AppointmentID: a.ID, Date: a.Date, QueueID: a.QueueID, QueueRunID: a.RunID,
		SlotEnd: a.SlotEnd.Format(time.RFC3339), SlotID: a.SlotID, SlotStart: a.SlotStart.Format(time.RFC3339),
		Status: string(a.Status)}
	e, err := platform.NewEvent(a.AccountID, ev(f), a.UpdatedAt)
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = a.QueueID, a.RunID
	return sink.Emit(ctx, e)
}
