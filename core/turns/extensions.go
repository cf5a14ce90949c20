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

// IntakeGuard is a rule another module adds to intake. Its methods run
// inside the unit of work of the intake or change, with its context, so
// what they write commits or rolls back with it; an error refuses it.
// A guard embeds GuardBase and writes only the methods it needs: every
// facet is a method of the one interface, so the service calls each guard
// alike and nothing asks at run time what a guard can do.
//
// Check runs after the run, schedule and answers were checked, before
// capacity (a refused code never takes a place in the run), and before the
// turn takes its number. Shape runs after every guard's Check passed and
// before the turn takes its number: it may give the turn its prefix and
// priority (an access code does); shapers apply in the order of the
// guards, a later one overriding an earlier one's fields. Admitted runs
// once the turn is stored.
//
// Returning rules on a finished turn coming back into the run (a
// no-show's re-entry, a reopen): a rule on the turns one customer may hold
// at once (access codes' oneActiveTurnPerCode) must hold then as it did at
// intake. It runs after the run and the turn were locked.
//
// BodyMembers are the members of the create body the guard declares.
type IntakeGuard interface {
	Check(ctx context.Context, in Intake) error
	Shape(ctx context.Context, in Intake) (Shaping, error)
	Admitted(ctx context.Context, in Intake, t Turn) error
	Returning(ctx context.Context, q queues.Queue, t Turn) error
	BodyMembers() []BodyMember
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
