package turns

import (
	"context"

	"github.com/qms-dev/qms/core/queues"
)

// Shaping is what IntakeGuard.Shape changes in the turn being admitted. A nil
// field changes nothing.
type Shaping struct {
	// Prefix replaces the display-code prefix the turn would have had (the
	// queue's turnPrefix or a chosen option's).
	Prefix *string
	// Priority replaces the priority the turn would have had (NORMAL or a
	// chosen option's).
	Priority *queues.Priority
}

// shape applies the guards' shapings to the draft.
func (s *Service) shape(ctx context.Context, in Intake, d *draft) error {
	for _, g := range s.guards {
		got, err := g.Shape(ctx, in)
		if err != nil {
			return err
		}
		if got.Prefix != nil {
			d.prefix = *got.Prefix
		}
		if got.Priority != nil && got.Priority.Valid() {
			d.priority = *got.Priority
		}
	}
	return nil
}
