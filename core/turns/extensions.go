package turns

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// BodyMember is a member of the turn create body that another module
// declares (the access-codes module's accessCode): core/turns does not name
// it. An IntakeGuard declares its members (BodyMembers); the
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

// Extensions holds the declared members a create carried, by name, each a
// non-nil value of its BodyMember.Zero's type.
type Extensions map[string]any

// bodyMembers collects the members the guards declare, in their order.
func bodyMembers(guards []IntakeGuard) []BodyMember {
	var out []BodyMember
	for _, g := range guards {
		out = append(out, g.BodyMembers()...)
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

// GuardBase is an IntakeGuard that allows everything, shapes nothing and
// declares no member: a guard embeds it and overrides what it rules on.
type GuardBase struct{}

// Check allows the intake.
func (GuardBase) Check(context.Context, Intake) error { return nil }

// Shape changes nothing.
func (GuardBase) Shape(context.Context, Intake) (Shaping, error) { return Shaping{}, nil }

// Admitted does nothing.
func (GuardBase) Admitted(context.Context, Intake, Turn) error { return nil }

// Returning allows the return.
func (GuardBase) Returning(context.Context, queues.Queue, Turn) error { return nil }

// BodyMembers declares none.
func (GuardBase) BodyMembers() []BodyMember { return nil }
