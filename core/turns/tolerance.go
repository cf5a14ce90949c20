package turns

import (
	"context"
	"strconv"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// ToleranceJobKind names the job that applies dispatchFlow.onToleranceExpired
// once a call's grace period is over.
const ToleranceJobKind = "turns.tolerance_expired"

// ToleranceArgs are the tolerance job's arguments: the turn and the call
// (its CallCount) the job belongs to. A later call of the same turn
// schedules its own job; this one then finds a newer call and does nothing.
type ToleranceArgs struct {
	TurnID    string `json:"turnId"`
	CallCount int    `json:"callCount"`
}

// scheduleExpiry schedules the tolerance job of t's current call at call
// time + tolerance.graceMinutes (at once for 0), in the unit of work of the
// call: a call that rolls back leaves no job. A queue without tolerance
// settings has no expiry.
func (s *Service) scheduleExpiry(ctx context.Context, q queues.Queue, t Turn) error {
	grace, ok := q.Grace()
	if !ok || t.CalledAt == nil {
		return nil
	}
	return s.jobs.Schedule(ctx, platform.Job{
		Kind:      ToleranceJobKind,
		Args:      ToleranceArgs{TurnID: t.ID, CallCount: t.CallCount},
		RunAt:     t.CalledAt.Add(grace),
		UniqueKey: t.ID + ":" + strconv.Itoa(t.CallCount),
	})
}

// ExpireTolerance is the tolerance job: if the turn is still in the call
// that scheduled the job and has neither arrived nor started, the queue's
// onToleranceExpired applies (no_show, cancel, hold or none). Anything else
// means the turn moved on, and the job does nothing, so running it twice
// changes nothing more than running it once.
func (s *Service) ExpireTolerance(ctx context.Context, args ToleranceArgs) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		c, err := s.lock(ctx, "", args.TurnID, OpExpire)
		if platform.IsCode(err, platform.CodeNotFound) {
			return nil // deleted with its queue
		}
		if err != nil {
			return err
		}
		if t := c.t; t.Status != Called || t.CallCount != args.CallCount || t.ArrivedAt != nil || t.StartedAt != nil {
			return nil
		}
		switch platform.Deref(c.q.DispatchFlow.OnToleranceExpired, queues.OnExpiredNoShow) {
		case queues.OnExpiredNoShow:
			finish(c, NoShow)
		case queues.OnExpiredCancel:
			cancelTurn(c, "tolerance_expired")
		case queues.OnExpiredHold:
			c.t.Status, c.t.HeldFrom = Held, HeldByExpiry
		default:
			return nil
		}
		return s.commit(ctx, c)
	})
}
