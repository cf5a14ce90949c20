package turns

import (
	"context"

	"github.com/qms-dev/qms/core/queues"
)

// Shaping is what an IntakeShaper changes in the turn being admitted. A nil
// field changes nothing.
type Shaping struct {
	// Prefix replaces the display-code prefix the turn would have had (the
	// queue's turnPrefix or a chosen option's).
	Prefix *string
	// Priority replaces the priority the turn would have had (NORMAL or a
	// chosen option's).
	Priority *queues.Priority
}

// IntakeShaper is an IntakeGuard that also shapes the turn it admits: an
// access code, for instance, gives the turn its prefix and priority. Shape
// runs after every guard's Check passed and before the turn takes its
// number, inside the intake's unit of work; an error refuses the turn.
// Shapers apply in the order of the guards, a later one overriding an
// earlier one's fields.
type IntakeShaper interface {
	IntakeGuard
	Shape(ctx context.Context, in Intake) (Shaping, error)
}

// shape applies the guards that are shapers to the draft.
func (s *Service) shape(ctx context.Context, in Intake, d *draft) error {
	for _, g := range s.guards {
		sh, ok := g.(IntakeShaper)
		if !ok {
			continue
		}
		got, err := sh.Shape(ctx, in)
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
