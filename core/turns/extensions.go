package turns

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Extensions holds the turn body fields that belong to other modules (an
// access code, for instance). It is embedded in CreateInput without a JSON
// name, so its fields are members of the body itself and strict decoding
// knows them. A module adds its field here and checks it in an IntakeGuard;
// the field is then part of the idempotency hash automatically.
type Extensions struct {
	// AccessCode is the access-codes module's field (a v1 extension of
	// spec 2.3): the code a queue with accessCodeRequired asks for, 1-32
	// characters. Checked and counted by that module's IntakeShaper.
	AccessCode *string `json:"accessCode,omitempty"`
}

// validate checks the bounds of the extension fields.
func (e Extensions) validate(v *platform.Validator) {
	v.OptLen("accessCode", e.AccessCode, 1, 32)
}

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
