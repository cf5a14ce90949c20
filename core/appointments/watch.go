package appointments

import (
	"context"

	"github.com/qms-dev/qms/core/queues"
)

// Watcher hears an appointment change inside the change's unit of work:
// a booking (before is the zero Appointment, its Status "") and every
// lifecycle step (cancel, check-in, start, complete, no-show). Its error
// rolls the change back. The notifications module watches to schedule an
// appointment's reminder with its booking and to drop it when the
// appointment moves on.
//
// The steps a HYBRID appointment's turn makes (TurnChanged) are not
// watched: the appointment was checked in before it had a turn, and
// nothing a watcher needs changes after that.
type Watcher interface {
	AppointmentChanged(ctx context.Context, q queues.Queue, before, after Appointment) error
}

// Watch adds w to the watchers. Call it while wiring.
func (s *Service) Watch(w Watcher) { s.watchers = append(s.watchers, w) }

// watch tells every watcher of a change, in the caller's unit of work.
func (s *Service) watch(ctx context.Context, q queues.Queue, before, after Appointment) error {
	for _, w := range s.watchers {
		if err := w.AppointmentChanged(ctx, q, before, after); err != nil {
			return err
		}
	}
	return nil
}
