package workflow

import (
	"context"
	"maps"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Transfer is the queue's transferEnabled made real (docs/queues.md): staff
// move a turn by hand to another turn queue of the account, with no link
// between the two. The spec's forward needs a link and a link is an
// administrator's standing route, so forward stays as the spec has it
// whatever transferEnabled says (a default-false flag refusing it would
// break every v1 client that forwards); transferEnabled decides the move
// no link allows.

// Codes raised by transfers.
const (
	// CodeTransferDisabled: the turn's queue has transferEnabled false. 409.
	CodeTransferDisabled = "TRANSFER_DISABLED"
	// CodeSameQueue: queueId is the turn's own queue. 422, field queueId.
	CodeSameQueue = "SAME_QUEUE"
)

// TransferReason is turn.cancelled's reason on the source turn of a
// transfer.
const TransferReason = "transferred"

// TransferInput is the body of POST /turns/{turnId}/transfer.
type TransferInput struct {
	QueueID *string `json:"queueId"`
}

// Validate checks the body.
func (in *TransferInput) Validate() error {
	var v platform.Validator
	if v.Required("queueId", in.QueueID != nil) {
		v.Len("queueId", *in.QueueID, 1, MaxQueueID)
	}
	return v.Err()
}

// Transferred is the answer of a transfer: the turn that left and the one
// that took its place.
type Transferred struct {
	From turns.View `json:"from"`
	To   turns.View `json:"to"`
}

// Transfer moves an unfinished turn of the account to the open run of
// another TURN or HYBRID queue of the account, in one transaction: the
// source turn is cancelled (turn.cancelled, reason "transferred") and a
// turn is admitted in the destination (turn.created) with the same party,
// priority, answers, and the display code when the destination run has no
// unfinished turn showing it; the phone only where the destination
// captures phones. queueId naming no queue is 422 QUEUE_NOT_FOUND,
// another account's 403. The destination's intake rules apply (INTAKE_CLOSED,
// QUEUE_CLOSED, CAPACITY_REACHED, NO_OPEN_RUN), and a refusal leaves the
// source turn as it was. 409 TRANSFER_DISABLED unless the turn's queue has
// transferEnabled.
func (f *Forwarder) Transfer(ctx context.Context, accountID, turnID string, in TransferInput) (Transferred, error) {
	if err := in.Validate(); err != nil {
		return Transferred{}, err
	}
	var out Transferred
	err := f.uow.Do(ctx, func(ctx context.Context) error {
		src, err := f.turns.Turn(ctx, accountID, turnID)
		if err != nil {
			return err
		}
		from, err := f.queues.GetQueue(ctx, src.QueueID)
		if err != nil {
			return err
		}
		if !from.TransferEnabled {
			return platform.Conflict(CodeTransferDisabled, "this queue does not allow transfers (transferEnabled is false)",
				map[string]any{"queueId": from.ID})
		}
		if *in.QueueID == src.QueueID {
			return platform.Unprocessable(CodeSameQueue, "the turn is in that queue already",
				map[string]any{"field": "queueId", "queueId": src.QueueID})
		}
		dest, err := f.queues.GetQueue(ctx, *in.QueueID)
		if platform.IsCode(err, platform.CodeNotFound) {
			return platform.Unprocessable(CodeQueueNotFound, "queueId does not name a queue of this account",
				map[string]any{"field": "queueId", "queueId": *in.QueueID})
		}
		if err != nil {
			return err
		}
		if dest.AccountID != accountID {
			return platform.ForeignResource("queue")
		}
		if dest.Type == queues.TypeAppointment {
			return platform.Unprocessable(CodeNotATurnQueue, "the destination is an APPOINTMENT queue, which takes no turns",
				map[string]any{"field": "queueId", "queueId": dest.ID})
		}
		run, err := f.openRun(ctx, dest.ID)
		if err != nil {
			return err
		}
		// Two runs change: lock both, lower id first, before anything
		// else (docs/turns.md, the lock order), so transfers crossing
		// between two queues at once wait for each other instead of
		// deadlocking. The cancel and the admission then find their run
		// locked already.
		for _, id := range ordered(src.RunID, run.ID) {
			if _, err := f.queues.GetRunForUpdate(ctx, id); err != nil {
				return err
			}
		}
		left, err := f.turns.CancelFor(ctx, accountID, src.ID, TransferReason)
		if err != nil {
			return err
		}
		a := turns.Admission{PeopleCount: src.PeopleCount, Priority: src.Priority, From: src.ID,
			FormResponse: maps.Clone(src.FormResponse), Number: src.Number, DisplayCode: src.DisplayCode}
		if dest.WhatsappCapture {
			a.Phone, a.NotifyWhatsapp = src.Phone, src.NotifyWhatsapp
		}
		t, err := f.turns.Admit(ctx, accountID, run.ID, a)
		if err != nil {
			return err
		}
		to, err := f.turns.Get(ctx, accountID, t.ID)
		if err != nil {
			return err
		}
		out = Transferred{From: left, To: to}
		return nil
	})
	return out, err
}

// ordered returns a and b, lower first.
func ordered(a, b string) []string {
	if b < a {
		return []string{b, a}
	}
	return []string{a, b}
}
