package workflow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Forward statuses.
const (
	// ForwardPending: the forwarding job has not run yet (or is retrying
	// after an infrastructure error).
	ForwardPending = "PENDING"
	// ForwardDone: the turn was created in the destination (toTurnId).
	ForwardDone = "FORWARDED"
	// ForwardFailed: the destination refused the turn (errorCode says why:
	// NO_OPEN_RUN, INTAKE_CLOSED, QUEUE_CLOSED, CAPACITY_REACHED,
	// LINK_DELETED, ...) or the job ran out of attempts (FORWARD_ERROR).
	// Not retried; POST /turns/{turnId}/forward with the link tries again.
	ForwardFailed = "FAILED"
)

// ForwardJobKind is the job that makes an automatic forward.
const ForwardJobKind = "workflow.forward"

// ForwardMaxAttempts bounds the retries of a forward that fails for an
// infrastructure reason (a refusal by the destination is final at once).
const ForwardMaxAttempts = 8

// PrefixForward is the id prefix of forwards.
const PrefixForward = "fwd"

// Codes raised by forwarding.
const (
	// CodeNoOpenRun: the destination queue has no open run (409).
	CodeNoOpenRun = "NO_OPEN_RUN"
	// CodeLinkDeleted: the link was deleted before its pending forward ran.
	CodeLinkDeleted = "LINK_DELETED"
	// CodeLinkNotFromQueue: the link's source is not the turn's queue (422).
	CodeLinkNotFromQueue = "LINK_NOT_FROM_TURN_QUEUE"
	// CodeForwardError: the job failed its last attempt for an
	// infrastructure reason; errorMessage has the error.
	CodeForwardError = "FORWARD_ERROR"
)

// Forward is the record of one forwarding of a turn through a link: at
// most one per (turn, link), which is what makes forwarding happen once
// however often its job runs.
type Forward struct {
	ID          string `json:"id"`
	AccountID   string `json:"-"`
	LinkID      string `json:"linkId"`
	FromTurnID  string `json:"fromTurnId"`
	FromQueueID string `json:"fromQueueId"`
	FromRunID   string `json:"fromQueueRunId"`
	ToQueueID   string `json:"toQueueId"`
	// Trigger is how the forward started: complete (the turn completed) or
	// manual (POST /turns/{turnId}/forward).
	Trigger  string  `json:"trigger"`
	Status   string  `json:"status"`
	ToTurnID *string `json:"toTurnId"`
	ToRunID  *string `json:"toQueueRunId"`
	// NumberKept is true when the destination turn kept the source turn's
	// number and display code (the link's keepNumber, and no unfinished
	// turn of the destination run showed that code); false when it drew a
	// number of its own.
	NumberKept   bool       `json:"numberKept"`
	Attempts     int        `json:"attempts"`
	ErrorCode    *string    `json:"errorCode"`
	ErrorMessage *string    `json:"errorMessage"`
	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
	ForwardedAt  *time.Time `json:"forwardedAt"`
	FailedAt     *time.Time `json:"failedAt"`
}

// ForwardArgs are the arguments of a forward job.
type ForwardArgs struct {
	ForwardID string `json:"forwardId"`
}

// Forwarder forwards turns through links: automatically when a turn
// completes (as an events.Subscriber of turn.completed, scheduling a job
// per matching link in the completing transaction), or at once on
// POST /turns/{turnId}/forward.
//
// Exactly once per (turn, link): the forward row is unique per pair, and
// the job and the manual forward both lock it and act only while it is
// PENDING (or FAILED, for a manual retry), creating the destination turn
// and marking it FORWARDED in one transaction.
type Forwarder struct {
	links  Repository
	repo   ForwardRepository
	turns  Turns
	queues QueueStore
	uow    platform.UnitOfWork
	jobs   platform.JobScheduler
	clock  platform.Clock
}

// NewForwarder builds the forwarder.
func NewForwarder(links Repository, repo ForwardRepository, ts Turns, qs QueueStore, uow platform.UnitOfWork,
	jobs platform.JobScheduler, clock platform.Clock) *Forwarder {
	return &Forwarder{links: links, repo: repo, turns: ts, queues: qs, uow: uow, jobs: jobs, clock: clock}
}

// OnEvent reacts to turn.completed, inside the transaction that completed
// the turn: for every link of trigger complete from the turn's queue whose
// conditions all hold, it records a PENDING forward and schedules its job,
// both committing with the completion. A turn completed again after a
// reopen finds its forwards already recorded and forwards nothing twice.
func (f *Forwarder) OnEvent(ctx context.Context, e platform.Event) error {
	done, ok, err := platform.DecodeAs[turns.TurnCompleted](e)
	if !ok || err != nil {
		return err
	}
	turnID := done.TurnID
	if turnID == "" || e.QueueID == "" {
		return fmt.Errorf("workflow: turn.completed %s without turnId or queue", e.ID)
	}
	links, err := f.links.LinksFrom(ctx, e.QueueID)
	if err != nil {
		return err
	}
	var auto []Link
	for _, l := range links {
		if l.Trigger == TriggerComplete {
			auto = append(auto, l)
		}
	}
	if len(auto) == 0 {
		return nil
	}
	t, err := f.turns.Turn(ctx, e.AccountID, turnID)
	if err != nil {
		return err
	}
	subject := Subject{FormResponse: t.FormResponse, Priority: string(t.Priority)}
	for _, l := range auto {
		if !l.Matches(subject) {
			continue
		}
		fw := f.newForward(t, l, TriggerComplete)
		created, err := f.repo.CreateForward(ctx, fw)
		if err != nil {
			return err
		}
		if !created {
			continue
		}
		if err := f.jobs.Schedule(ctx, platform.Job{
			Kind: ForwardJobKind, Args: ForwardArgs{ForwardID: fw.ID},
			UniqueKey: t.ID + "/" + l.ID, MaxAttempts: ForwardMaxAttempts,
		}); err != nil {
			return err
		}
	}
	return nil
}

func (f *Forwarder) newForward(t turns.Turn, l Link, trigger string) Forward {
	now := f.clock.Now()
	return Forward{ID: platform.NewID(PrefixForward), AccountID: t.AccountID, LinkID: l.ID, FromTurnID: t.ID,
		FromQueueID: t.QueueID, FromRunID: t.RunID, ToQueueID: l.ToQueueDefinitionID, Trigger: trigger,
		Status: ForwardPending, CreatedAt: now, UpdatedAt: now}
}

// Run is the forward job: it makes the forward if it is still pending.
// A refusal by the destination (no open run, intake or run closed,
// capacity, the link deleted) is recorded as FAILED with its code and
// not retried; any other error is returned for the job to retry, and
// recorded as FAILED (FORWARD_ERROR) when it was the last attempt.
func (f *Forwarder) Run(ctx context.Context, args ForwardArgs, attempt int, last bool) error {
	err := f.uow.Do(ctx, func(ctx context.Context) error {
		fw, err := f.repo.GetForwardForUpdate(ctx, args.ForwardID)
		if platform.IsCode(err, platform.CodeNotFound) {
			return nil // its turn was deleted, and the forward with it
		}
		if err != nil {
			return err
		}
		if fw.Status != ForwardPending {
			return nil // made (or failed) by an earlier run or a manual forward
		}
		fw.Attempts = attempt
		if err := f.deliver(ctx, &fw, nil); err != nil {
			return err
		}
		return f.repo.UpdateForward(ctx, fw)
	})
	if err == nil {
		return nil
	}
	if refusal(err) {
		return f.fail(ctx, args.ForwardID, attempt, err)
	}
	if last {
		if ferr := f.fail(ctx, args.ForwardID, attempt, err); ferr != nil {
			return errors.Join(err, ferr)
		}
	}
	return err
}

// refusal reports whether err is a business refusal: final, not worth a
// retry.
func refusal(err error) bool {
	e, ok := platform.AsError(err)
	return ok && e.Kind != platform.KindInternal
}

// fail records a forward as FAILED, if it is still pending, in a unit of
// work of its own (the one that failed rolled back).
func (f *Forwarder) fail(ctx context.Context, id string, attempt int, cause error) error {
	return f.uow.Do(ctx, func(ctx context.Context) error {
		fw, err := f.repo.GetForwardForUpdate(ctx, id)
		if platform.IsCode(err, platform.CodeNotFound) {
			return nil
		}
		if err != nil || fw.Status != ForwardPending {
			return err
		}
		code, msg := CodeForwardError, cause.Error()
		if e, ok := platform.AsError(cause); ok && e.Kind != platform.KindInternal {
			code, msg = e.Code, e.Message
		}
		now := f.clock.Now()
		fw.Status, fw.ErrorCode, fw.ErrorMessage, fw.Attempts, fw.FailedAt, fw.UpdatedAt = ForwardFailed, &code, &msg, attempt, &now, now
		return f.repo.UpdateForward(ctx, fw)
	})
}

// deliver creates the destination turn of fw and marks fw FORWARDED. The
// link's current settings apply (keepNumber, keepFormResponse); the
// destination is the one recorded when the forward began, unless link is
// given (a manual forward follows the link as it is now).
func (f *Forwarder) deliver(ctx context.Context, fw *Forward, link *Link) error {
	if link == nil {
		l, err := f.links.GetLink(ctx, fw.LinkID)
		if platform.IsCode(err, platform.CodeNotFound) {
			return platform.Unprocessable(CodeLinkDeleted, "the link was deleted before the turn was forwarded",
				map[string]any{"linkId": fw.LinkID})
		}
		if err != nil {
			return err
		}
		link = &l
	}
	src, err := f.turns.Turn(ctx, fw.AccountID, fw.FromTurnID)
	if err != nil {
		return err
	}
	dest, err := f.queues.GetQueue(ctx, fw.ToQueueID)
	if err != nil {
		return err
	}
	if dest.Type == queues.TypeAppointment {
		return platform.Unprocessable(CodeNotATurnQueue, "the destination is an APPOINTMENT queue, which takes no turns",
			map[string]any{"queueId": dest.ID})
	}
	run, err := f.openRun(ctx, dest.ID)
	if err != nil {
		return err
	}
	// The same customer goes on: the party size and priority carry over;
	// the phone only where the destination captures phones.
	a := turns.Admission{PeopleCount: src.PeopleCount, Priority: src.Priority, From: src.ID}
	if dest.WhatsappCapture {
		a.Phone, a.NotifyWhatsapp = src.Phone, src.NotifyWhatsapp
	}
	if link.KeepFormResponse {
		a.FormResponse = maps.Clone(src.FormResponse)
	}
	if link.KeepNumber {
		a.Number, a.DisplayCode = src.Number, src.DisplayCode
	}
	t, err := f.turns.Admit(ctx, fw.AccountID, run.ID, a)
	if err != nil {
		return err
	}
	now := f.clock.Now()
	fw.Status, fw.ToTurnID, fw.ToRunID, fw.ForwardedAt, fw.UpdatedAt = ForwardDone, &t.ID, &t.RunID, &now, now
	fw.NumberKept = link.KeepNumber && t.DisplayCode == src.DisplayCode
	fw.ErrorCode, fw.ErrorMessage, fw.FailedAt = nil, nil, nil
	return nil
}

// runsLooked is how many of a queue's newest runs are searched for an
// open one.
const runsLooked = 20

// openRun picks the destination run: the newest open run taking turns,
// else the newest open run (whose closed intake Admit then reports), else
// NO_OPEN_RUN.
func (f *Forwarder) openRun(ctx context.Context, queueID string) (queues.Run, error) {
	runs, err := f.queues.ListRuns(ctx, queueID, runsLooked)
	if err != nil {
		return queues.Run{}, err
	}
	var open *queues.Run
	for i := range runs {
		if !runs[i].Open() {
			continue
		}
		if runs[i].IntakeOpen {
			return runs[i], nil
		}
		if open == nil {
			open = &runs[i]
		}
	}
	if open != nil {
		return *open, nil
	}
	return queues.Run{}, platform.Conflict(CodeNoOpenRun, "the destination queue has no open run",
		map[string]any{"queueId": queueID})
}

// ForwardInput is the body of POST /turns/{turnId}/forward.
type ForwardInput struct {
	LinkID *string `json:"linkId"`
}

// Validate checks the body.
func (in *ForwardInput) Validate() error {
	var v platform.Validator
	if v.Required("linkId", in.LinkID != nil) {
		v.Len("linkId", *in.LinkID, 1, MaxQueueID)
	}
	return v.Err()
}

// ForwardNow forwards a turn through a link at once, whatever the link's
// trigger and without its conditions (staff decide), and returns the
// forward. The link must start at the turn's queue (422
// LINK_NOT_FROM_TURN_QUEUE). The source turn is left as it is: complete or
// cancel it through dispatch.
//
// Once per (turn, link): a turn already forwarded through the link gets
// the existing forward back and nothing new is created. A pending forward
// is made now (its job then finds it done); a FAILED one is tried again. A
// refusal by the destination (NO_OPEN_RUN, INTAKE_CLOSED, ...) is the
// answer, and nothing is recorded.
func (f *Forwarder) ForwardNow(ctx context.Context, accountID, turnID string, in ForwardInput) (Forward, error) {
	if err := in.Validate(); err != nil {
		return Forward{}, err
	}
	var out Forward
	err := f.uow.Do(ctx, func(ctx context.Context) error {
		t, err := f.turns.Turn(ctx, accountID, turnID)
		if err != nil {
			return err
		}
		l, err := f.links.GetLink(ctx, *in.LinkID)
		if err != nil {
			return err
		}
		if l.AccountID != accountID {
			return platform.ForeignResource("queue link")
		}
		if l.FromQueueDefinitionID != t.QueueID {
			return platform.Unprocessable(CodeLinkNotFromQueue, "the link does not start at the turn's queue",
				map[string]any{"field": "linkId", "linkId": l.ID, "fromQueueDefinitionId": l.FromQueueDefinitionID, "queueId": t.QueueID})
		}
		if _, err := f.repo.CreateForward(ctx, f.newForward(t, l, TriggerManual)); err != nil {
			return err
		}
		fw, err := f.repo.ForwardOfForUpdate(ctx, t.ID, l.ID)
		if err != nil {
			return err
		}
		if fw.Status == ForwardDone {
			out = fw
			return nil
		}
		fw.ToQueueID = l.ToQueueDefinitionID
		fw.Attempts++
		if err := f.deliver(ctx, &fw, &l); err != nil {
			return err
		}
		out = fw
		return f.repo.UpdateForward(ctx, fw)
	})
	return out, err
}

// OfLink pages through the forwards of a link of the account. A deleted
// link's forwards stay visible (its LINK_DELETED failures among them): its
// owner is then the account its forwards name, and a deleted link that
// forwarded nothing is 404 like one that never was.
func (f *Forwarder) OfLink(ctx context.Context, accountID, linkID string, page platform.PageRequest) (platform.Page[Forward], error) {
	owner, err := f.linkOwner(ctx, linkID)
	if err != nil {
		return platform.Page[Forward]{}, err
	}
	if owner != accountID {
		return platform.Page[Forward]{}, platform.ForeignResource("queue link")
	}
	items, err := f.repo.ForwardsOfLink(ctx, linkID, page)
	if err != nil {
		return platform.Page[Forward]{}, err
	}
	return platform.PageOf(items, page.Limit, func(fw Forward) string { return fw.ID }), nil
}

// linkOwner returns the account of a link, or of a deleted link's forwards.
func (f *Forwarder) linkOwner(ctx context.Context, linkID string) (string, error) {
	l, err := f.links.GetLink(ctx, linkID)
	if err == nil || !platform.IsCode(err, platform.CodeNotFound) {
		return l.AccountID, err
	}
	some, ferr := f.repo.ForwardsOfLink(ctx, linkID, platform.PageRequest{Limit: 1})
	if ferr != nil {
		return "", ferr
	}
	if len(some) == 0 {
		return "", err
	}
	return some[0].AccountID, nil
}

// OfTurn lists the forwards of a turn of the account (at most one per
// link of its queue).
func (f *Forwarder) OfTurn(ctx context.Context, accountID, turnID string) ([]Forward, error) {
	if _, err := f.turns.Turn(ctx, accountID, turnID); err != nil {
		return nil, err
	}
	out, err := f.repo.ForwardsOfTurn(ctx, turnID)
	if out == nil {
		out = []Forward{}
	}
	return out, err
}
