package accesscodes

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// TurnCode is what a turn keeps of the access code it was taken with: the
// code, and a copy of its classification and properties as they were at
// intake (a later change of the code does not rewrite a turn's history).
type TurnCode struct {
	TurnID         string         `json:"turnId"`
	AccessCodeID   string         `json:"accessCodeId"`
	Code           string         `json:"code"`
	AccountID      string         `json:"-"`
	QueueID        string         `json:"queueId"`
	RunID          string         `json:"queueRunId"`
	Prefix         *string        `json:"prefix"`
	Priority       *string        `json:"priority"`
	Classification *string        `json:"classification"`
	Properties     map[string]any `json:"properties"`
	CreatedAt      time.Time      `json:"createdAt"`
}

// Guard is the access-code rule of turn intake: a turns.IntakeGuard that
// checks, shapes and rules on returns.
//
//   - A queue with accessCodeRequired refuses a turn without a code
//     (ACCESS_CODE_REQUIRED, 422).
//   - A code given (required or not) must be usable in the queue (see
//     Service.Use); the turn takes one use of it, counted in the intake's
//     transaction, so a refused or rolled-back turn uses nothing.
//   - The code's prefix and priority, when set, replace those the turn
//     would have had; its classification and properties are kept with the
//     turn (TurnCodes).
//   - With carpool.oneActiveTurnPerCode, a code that already has a pending
//     turn in the queue is refused (ACCESS_CODE_IN_USE, 409). Intakes with
//     one code serialise on the code's row (the use counter), so two
//     concurrent intakes cannot both pass.
//   - A turn forwarded from a connected queue needs no code: its customer
//     was admitted upstream.
type Guard struct {
	svc   *Service
	codes TurnCodes
	clock platform.Clock
}

var _ turns.IntakeGuard = (*Guard)(nil)

// BodyMember is the accessCode member of the turn create body (a v1
// extension of spec 2.3): the code a queue with accessCodeRequired asks
// for, 1-32 characters. The module declares it; core/turns does not name
// it.
const BodyMember = "accessCode"

// BodyMembers declares accessCode.
func (g *Guard) BodyMembers() []turns.BodyMember {
	return []turns.BodyMember{{Name: BodyMember, Zero: (*string)(nil), Validate: func(v *platform.Validator, value any) {
		code, _ := value.(*string)
		v.OptLen(BodyMember, code, 1, 32)
	}}}
}

// accessCode is the code a create carried, nil when none.
func accessCode(in turns.Intake) *string {
	code, _ := in.Input.Extensions[BodyMember].(*string)
	return code
}

// NewGuard builds the intake guard.
func NewGuard(svc *Service, codes TurnCodes, clock platform.Clock) *Guard {
	return &Guard{svc: svc, codes: codes, clock: clock}
}

// Check does nothing: Shape checks the code, since what it finds also
// shapes the turn.
func (g *Guard) Check(context.Context, turns.Intake) error { return nil }

// Shape checks and takes the intake's code and returns what it gives the
// turn.
func (g *Guard) Shape(ctx context.Context, in turns.Intake) (turns.Shaping, error) {
	if in.Forwarded {
		return turns.Shaping{}, nil
	}
	value := accessCode(in)
	if value == nil {
		if in.Queue.AccessCodeRequired {
			return turns.Shaping{}, platform.Unprocessable(CodeRequired, "the queue requires an access code (accessCode)",
				map[string]any{"field": "accessCode", "queueId": in.Queue.ID})
		}
		return turns.Shaping{}, nil
	}
	c, err := g.svc.Use(ctx, in.AccountID, *value, Target{QueueID: in.Queue.ID, EntityID: in.Queue.EntityID})
	if err != nil {
		return turns.Shaping{}, err
	}
	if platform.Deref(in.Queue.Carpool.OneActiveTurnPerCode, false) {
		turnID, busy, err := g.codes.ActiveTurn(ctx, c.ID, in.Queue.ID)
		if err != nil {
			return turns.Shaping{}, err
		}
		if busy {
			return turns.Shaping{}, platform.Conflict(CodeInUse, "the access code already has an active turn in this queue",
				map[string]any{"field": "accessCode", "accessCodeId": c.ID, "turnId": turnID})
		}
	}
	var sh turns.Shaping
	sh.Prefix = c.Prefix
	if c.Priority != nil {
		p := queues.Priority(*c.Priority)
		sh.Priority = &p
	}
	return sh, nil
}

// Returning keeps carpool.oneActiveTurnPerCode when a finished turn taken
// with a code comes back (a no-show's re-entry, a reopen): refused with
// ACCESS_CODE_IN_USE while another turn of the queue holds the code. The
// code's row is locked first, as an intake's use of it is, so the two
// cannot both pass.
func (g *Guard) Returning(ctx context.Context, q queues.Queue, t turns.Turn) error {
	if !platform.Deref(q.Carpool.OneActiveTurnPerCode, false) {
		return nil
	}
	tc, err := g.codes.ForTurn(ctx, t.ID)
	if platform.IsCode(err, platform.CodeNotFound) {
		return nil // taken without a code
	}
	if err != nil {
		return err
	}
	if err := g.svc.repo.Lock(ctx, tc.AccessCodeID); err != nil {
		return err
	}
	other, busy, err := g.codes.ActiveTurn(ctx, tc.AccessCodeID, q.ID)
	if err != nil {
		return err
	}
	if busy && other != t.ID {
		return platform.Conflict(CodeInUse, "the access code already has an active turn in this queue",
			map[string]any{"accessCodeId": tc.AccessCodeID, "turnId": other})
	}
	return nil
}

// Admitted records which code the stored turn took.
func (g *Guard) Admitted(ctx context.Context, in turns.Intake, t turns.Turn) error {
	if in.Forwarded || accessCode(in) == nil {
		return nil
	}
	c, err := g.svc.repo.GetByCode(ctx, in.AccountID, *accessCode(in))
	if err != nil {
		return err
	}
	return g.codes.Record(ctx, TurnCode{
		TurnID: t.ID, AccessCodeID: c.ID, Code: c.Code, AccountID: in.AccountID, QueueID: t.QueueID, RunID: t.RunID,
		Prefix: c.Prefix, Priority: c.Priority, Classification: c.Classification, Properties: c.Properties,
		CreatedAt: g.clock.Now(),
	})
}

// ForTurn returns the access code a turn of the account was taken with:
// 404 when there is no such record (the turn does not exist or took no
// code), 403 when the turn is another account's.
func (g *Guard) ForTurn(ctx context.Context, accountID, turnID string) (TurnCode, error) {
	tc, err := g.codes.ForTurn(ctx, turnID)
	if err != nil {
		return TurnCode{}, err
	}
	if tc.AccountID != accountID {
		return TurnCode{}, platform.ForeignResource("turn")
	}
	return tc, nil
}
