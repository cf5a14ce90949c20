package turns

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// BodyMember is a member of the turn create body that another module
// declares (the access-codes module's accessCode): core/turns does not name
// it. An IntakeGuard that is also a BodyExtender declares its members; the
// HTTP layer decodes each as strictly as the body's own members, into a
// value of Zero's type, Create validates it with Validate, and it counts in
// the idempotency hash.
type BodyMember struct {
	Name string
	// Zero is a value of the member's Go type, a typed nil pointer
	// ((*string)(nil)): absent and null decode to it.
	Zero any
	// Validate checks the bounds of a value the body carried.
	Validate func(v *platform.Validator, value any)
}

// BodyExtender is an IntakeGuard that declares body members.
type BodyExtender interface {
	BodyMembers() []BodyMember
}

// Extensions holds the declared members a create carried, by name, each a
// non-nil value of its BodyMember.Zero's type.
type Extensions map[string]any

// bodyMembers collects the members the guards declare, in their order.
func bodyMembers(guards []IntakeGuard) []BodyMember {
	var out []BodyMember
	for _, g := range guards {
		if e, ok := g.(BodyExtender); ok {
			out = append(out, e.BodyMembers()...)
		}
	}
	return out
}

// BodyMembers returns the create body's members other modules declared.
func (s *Service) BodyMembers() []BodyMember { return s.members }

// Intake is what an IntakeGuard sees of a turn being taken.
type Intake struct {
	AccountID string
	Queue     queues.Queue
	Run       queues.Run
	Input     CreateInput
	// Forwarded is true when the turn comes from Admit (a connected
	// queue) rather than the public create.
	Forwarded bool
}

// IntakeGuard is a rule another module adds to intake. Both methods run
// inside the intake's unit of work, with its context, so what they write
// commits or rolls back with the turn; an error refuses the turn.
//
// Check runs after the run, schedule and answers were checked, before
// capacity (a refused code never takes a place in the run), and before the
// turn takes its number. Admitted runs once the turn is stored.
type IntakeGuard interface {
	Check(ctx context.Context, in Intake) error
	Admitted(ctx context.Context, in Intake, t Turn) error
}

// ReturnGuard is an IntakeGuard that also rules on a finished turn coming
// back into the run (a no-show's re-entry, a reopen): a rule on the turns
// one customer may hold at once (access codes' oneActiveTurnPerCode) must
// hold then as it did at intake. Returning runs in the change's unit of
// work, after the run and the turn were locked; an error refuses the
// change.
type ReturnGuard interface {
	Returning(ctx context.Context, q queues.Queue, t Turn) error
}
