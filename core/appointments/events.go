package appointments

import (
	"context"
	"fmt"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// The payloads of the appointment events of spec section 6, one type per
// event; their JSON is the event's data, marshalled once when it is
// raised. Fields are declared in the byte order of their JSON names, the
// order of the earlier map payloads, so the bytes sent stay as they were.

// AppointmentScheduled is the data of appointment.scheduled. SlotStart and
// SlotEnd are RFC 3339 instants, Date the slot's day in the queue's zone.
type AppointmentScheduled struct {
	AppointmentID string `json:"appointmentId"`
	Date          string `json:"date"`
	QueueID       string `json:"queueId"`
	QueueRunID    string `json:"queueRunId"`
	SlotEnd       string `json:"slotEnd"`
	SlotID        string `json:"slotId"`
	SlotStart     string `json:"slotStart"`
	Status        string `json:"status"`
}

// AppointmentCompleted is the data of appointment.completed.
type AppointmentCompleted struct {
	AppointmentID string `json:"appointmentId"`
	Date          string `json:"date"`
	QueueID       string `json:"queueId"`
	QueueRunID    string `json:"queueRunId"`
	SlotEnd       string `json:"slotEnd"`
	SlotID        string `json:"slotId"`
	SlotStart     string `json:"slotStart"`
	Status        string `json:"status"`
}

func (s *Service) emit(ctx context.Context, name string, a Appointment) error {
	start, end := a.SlotStart.Format(time.RFC3339), a.SlotEnd.Format(time.RFC3339)
	var payload any
	switch name {
	case platform.EventAppointmentScheduled:
		payload = AppointmentScheduled{AppointmentID: a.ID, Date: a.Date, QueueID: a.QueueID, QueueRunID: a.RunID,
			SlotEnd: end, SlotID: a.SlotID, SlotStart: start, Status: string(a.Status)}
	case platform.EventAppointmentCompleted:
		payload = AppointmentCompleted{AppointmentID: a.ID, Date: a.Date, QueueID: a.QueueID, QueueRunID: a.RunID,
			SlotEnd: end, SlotID: a.SlotID, SlotStart: start, Status: string(a.Status)}
	default:
		return fmt.Errorf("appointments: %s is not an appointment event", name)
	}
	e, err := platform.NewEvent(a.AccountID, name, payload, a.UpdatedAt)
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = a.QueueID, a.RunID
	return s.events.Emit(ctx, e)
}
