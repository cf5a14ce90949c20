package appointments

import (
	"context"

	"github.com/qms-dev/qms/core/queues"
)

// watch tells every watcher of a change, in the caller's unit of work.
func (s *Service) watch(ctx context.Context, q queues.Queue, before, after Appointment) error {
	for _, w := range s.watchers {
		if err := w.AppointmentChanged(ctx, q, before, after); err != nil {
			return err
		}
	}
	return nil
}
