package workflow

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// PrefixLink is the id prefix of links.
const PrefixLink = platform.PrefixLink

// Codes raised by this module.
const (
	// CodeQueueNotFound: a queue id of the link body names no queue (422).
	CodeQueueNotFound = "QUEUE_NOT_FOUND"
	// CodeNotATurnQueue: the destination is an APPOINTMENT queue, which
	// takes no turns (422).
	CodeNotATurnQueue = "NOT_A_TURN_QUEUE"
)

// Service is the connected-queues use cases.
type Service struct {
	repo   Repository
	queues Queues
	uow    platform.UnitOfWork
	clock  platform.Clock
}

// NewService builds the service.
func NewService(repo Repository, qs Queues, uow platform.UnitOfWork, clock platform.Clock) *Service {
	return &Service{repo: repo, queues: qs, uow: uow, clock: clock}
}

// checkQueues checks that both ends are queues of the account: 422
// QUEUE_NOT_FOUND naming the field when one does not exist, 403 when it is
// another account's.
func (s *Service) checkQueues(ctx context.Context, accountID, from, to string) error {
	for _, end := range []struct{ field, id string }{{"fromQueueDefinitionId", from}, {"toQueueDefinitionId", to}} {
		q, err := s.queues.GetQueue(ctx, accountID, end.id)
		if platform.IsCode(err, platform.CodeNotFound) {
			return platform.Unprocessable(CodeQueueNotFound, end.field+" does not name a queue of this account",
				map[string]any{"field": end.field, "queueId": end.id})
		}
		if err != nil {
			return err
		}
		// A forward creates a turn, which an APPOINTMENT queue does not
		// take. (An APPOINTMENT source is allowed but never forwards:
		// its appointments are not turns.)
		if end.field == "toQueueDefinitionId" && q.Type == queues.TypeAppointment {
			return platform.Unprocessable(CodeNotATurnQueue, "the destination is an APPOINTMENT queue, which takes no turns",
				map[string]any{"field": end.field, "queueId": end.id, "type": q.Type})
		}
	}
	return nil
}

// Create creates a link, applying the defaults of spec 2.8.
func (s *Service) Create(ctx context.Context, accountID string, in CreateInput) (Link, error) {
	if err := in.Validate(); err != nil {
		return Link{}, err
	}
	var out Link
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		if err := s.checkQueues(ctx, accountID, *in.FromQueueDefinitionID, *in.ToQueueDefinitionID); err != nil {
			return err
		}
		now := s.clock.Now()
		out = Link{
			ID: platform.NewID(PrefixLink), AccountID: accountID,
			FromQueueDefinitionID: *in.FromQueueDefinitionID, ToQueueDefinitionID: *in.ToQueueDefinitionID,
			Trigger:    platform.Deref(in.Trigger, TriggerComplete),
			KeepNumber: platform.Deref(in.KeepNumber, false), KeepFormResponse: platform.Deref(in.KeepFormResponse, false),
			Conditions: normalise(in.Conditions), CreatedAt: now, UpdatedAt: now,
		}
		return s.repo.CreateLink(ctx, out)
	})
	return out, err
}

// Get returns a link of the account: 404 when missing, 403 when another
// account's.
func (s *Service) Get(ctx context.Context, accountID, id string) (Link, error) {
	l, err := s.repo.GetLink(ctx, id)
	if err != nil {
		return Link{}, err
	}
	if l.AccountID != accountID {
		return Link{}, platform.ForeignResource("queue link")
	}
	return l, nil
}

// List pages through the account's links, oldest first.
func (s *Service) List(ctx context.Context, accountID string, page platform.PageRequest) (platform.Page[Link], error) {
	items, err := s.repo.ListLinks(ctx, accountID, page)
	if err != nil {
		return platform.Page[Link]{}, err
	}
	return platform.PageOf(items, page.Limit, func(l Link) string { return l.ID }), nil
}

// Update applies a PATCH: the queue ids (required) are checked as on
// create; every other field given replaces the stored one and every field
// absent is kept, with no default applied.
func (s *Service) Update(ctx context.Context, accountID, id string, in UpdateInput) (Link, error) {
	if err := in.Validate(); err != nil {
		return Link{}, err
	}
	var out Link
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		l, err := s.Get(ctx, accountID, id)
		if err != nil {
			return err
		}
		if err := s.checkQueues(ctx, accountID, *in.FromQueueDefinitionID, *in.ToQueueDefinitionID); err != nil {
			return err
		}
		l.FromQueueDefinitionID, l.ToQueueDefinitionID = *in.FromQueueDefinitionID, *in.ToQueueDefinitionID
		if in.Trigger.Set {
			l.Trigger = in.Trigger.Value
		}
		if in.KeepNumber.Set {
			l.KeepNumber = in.KeepNumber.Value
		}
		if in.KeepFormResponse.Set {
			l.KeepFormResponse = in.KeepFormResponse.Value
		}
		if in.Conditions.Set {
			l.Conditions = normalise(in.Conditions.Value)
		}
		l.UpdatedAt = s.clock.Now()
		out = l
		return s.repo.UpdateLink(ctx, l)
	})
	return out, err
}

// Delete removes a link. Forwards it already started keep their record;
// one still pending finds the link gone and is recorded as failed.
func (s *Service) Delete(ctx context.Context, accountID, id string) (Link, error) {
	var out Link
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		l, err := s.Get(ctx, accountID, id)
		if err != nil {
			return err
		}
		out = l
		return s.repo.DeleteLink(ctx, id)
	})
	return out, err
}
