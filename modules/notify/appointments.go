package notify

import (
	"context"

	"github.com/qms-dev/qms/core/appointments"
	core "github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/queues"
)

// appointmentWatcher hands every booking and appointment step to the
// Decider as a notify.AppointmentChange, inside the change's unit of work.
type appointmentWatcher struct{ s *core.Decider }

func (w appointmentWatcher) AppointmentChanged(ctx context.Context, q queues.Queue, before, after appointments.Appointment) error {
	c := core.AppointmentChange{AccountID: after.AccountID, AppointmentID: after.ID, QueueID: after.QueueID,
		RunID: after.RunID, QueueName: q.Name, Phone: after.Phone, WhatsApp: after.NotifyWhatsapp,
		Before: string(before.Status), After: string(after.Status), SlotStart: after.SlotStart, Zone: q.Zone()}
	if after.Language != nil {
		c.Language = *after.Language
	}
	return w.s.AppointmentChanged(ctx, c)
}

// appointmentsPort is the appointments module as the reminder's send job
// needs it.
type appointmentsPort struct{ as *appointments.Service }

func (p appointmentsPort) AppointmentNow(ctx context.Context, accountID, id string) (core.AppointmentNow, error) {
	a, err := p.as.Get(ctx, accountID, id)
	if err != nil {
		return core.AppointmentNow{}, err
	}
	return core.AppointmentNow{Status: string(a.Status), SlotStart: a.SlotStart}, nil
}
