package turns

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// The queue's sla.maxWaitMinutes watched (docs/queues.md): when a turn is
// taken in a queue with the target, a job is scheduled for the moment the
// target passes; if the turn has not been called by then (WAITLISTED,
// WAITING or HELD), turn.sla_breached is raised, once per turn (a turn
// mark, so a job run twice raises it once). The job
// reads the queue's target when it runs: a target lowered meanwhile is
// applied at once, a target raised moves the job to the new moment, a
// target removed raises nothing. Turns taken before the queue had a target
// are not watched.
// MarkSLAWait is the mark of a turn whose turn.sla_breached was raised.
const MarkSLAWait = "sla_wait"

// SLAJobKind names the job that checks a turn against sla.maxWaitMinutes.
const SLAJobKind = "turns.sla_wait"

// SLAArgs are the SLA job's arguments.
type SLAArgs struct {
	TurnID string `json:"turnId"`
}

// EventSLABreached is the event of a turn waiting past its queue's
// sla.maxWaitMinutes.
const EventSLABreached = "turn.sla_breached"

// TurnSLABreached is the data of turn.sla_breached: the turn has waited
// MaxWaitMinutes since WaitingSince (when it was taken) and is still not
// called. Fields in the byte order of their JSON names.
type TurnSLABreached struct {
	DisplayCode    string    `json:"displayCode"`
	MaxWaitMinutes int       `json:"maxWaitMinutes"`
	QueueID        string    `json:"queueId"`
	QueueRunID     string    `json:"queueRunId"`
	Status         string    `json:"status"`
	TurnID         string    `json:"turnId"`
	WaitingSince   time.Time `json:"waitingSince"`
}

// EventName is the event this payload is the data of.
func (TurnSLABreached) EventName() string { return EventSLABreached }

// slaDeadline is when t passes q's wait target, and whether q has one.
func slaDeadline(q queues.Queue, t Turn) (time.Time, bool) {
	if q.SLA.MaxWaitMinutes == nil {
		return time.Time{}, false
	}
	return t.CreatedAt.Add(time.Duration(*q.SLA.MaxWaitMinutes) * time.Minute), true
}

// scheduleSLA schedules the SLA job of a new turn, in the unit of work
// that takes it (a rolled-back intake leaves no job).
func (s *Service) scheduleSLA(ctx context.Context, q queues.Queue, t Turn) error {
	at, ok := slaDeadline(q, t)
	if !ok {
		return nil
	}
	return s.jobs.Schedule(ctx, platform.Job{Kind: SLAJobKind, Args: SLAArgs{TurnID: t.ID}, RunAt: at,
		UniqueKey: t.ID + "@" + at.UTC().Format(time.RFC3339Nano)})
}

// waitingForCall reports whether a turn has not been called yet.
func waitingForCall(st Status) bool { return st == Waitlisted || st == Waiting || st == Held }

// CheckSLA is the SLA job: it raises turn.sla_breached when the turn,
// still not called, has passed its queue's current wait target; it
// reschedules itself when the target moved later, and does nothing when
// the turn was called, finished or deleted, or the target is gone.
func (s *Service) CheckSLA(ctx context.Context, args SLAArgs) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		t, err := s.repo.Get(ctx, args.TurnID)
		if platform.IsCode(err, platform.CodeNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !waitingForCall(t.Status) {
			return nil
		}
		q, err := s.queues.GetQueue(ctx, t.QueueID)
		if platform.IsCode(err, platform.CodeNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		at, ok := slaDeadline(q, t)
		if !ok {
			return nil
		}
		now := s.clock.Now()
		if now.Before(at) {
			return s.scheduleSLA(ctx, q, t) // the target moved later
		}
		first, err := s.repo.MarkOnce(ctx, t.ID, MarkSLAWait, now)
		if err != nil || !first {
			return err
		}
		e, err := platform.NewEvent(t.AccountID, TurnSLABreached{DisplayCode: t.DisplayCode,
			MaxWaitMinutes: *q.SLA.MaxWaitMinutes, QueueID: t.QueueID, QueueRunID: t.RunID, Status: string(t.Status),
			TurnID: t.ID, WaitingSince: t.CreatedAt.UTC()}, s.clock.Now())
		if err != nil {
			return err
		}
		e.QueueID, e.RunID = t.QueueID, t.RunID
		return s.events.Emit(ctx, e)
	})
}
