package ticket

import (
	"context"
	"fmt"
	"time"

	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// CancelReason is turn.cancelled's reason when the customer leaves the
// queue from the ticket page.
const CancelReason = "customer"

// Options tune the service.
type Options struct {
	// ExpireAfter is how long a link stays open after its turn finished
	// (DefaultExpireAfter when zero).
	ExpireAfter time.Duration
}

// Service is the ticket link use cases.
type Service struct {
	repo     Repository
	turns    Turns
	places   Places
	branches Branches
	uow      platform.UnitOfWork
	events   platform.EventSink
	clock    platform.Clock
	after    time.Duration
}

// NewService builds the service.
func NewService(repo Repository, ts Turns, ps Places, bs Branches, uow platform.UnitOfWork, events platform.EventSink,
	clock platform.Clock, opts Options) *Service {
	if opts.ExpireAfter <= 0 {
		opts.ExpireAfter = DefaultExpireAfter
	}
	return &Service{repo: repo, turns: ts, places: ps, branches: bs, uow: uow, events: events, clock: clock, after: opts.ExpireAfter}
}

// ExpireAfter is how long links stay open after their turn finished.
func (s *Service) ExpireAfter() time.Duration { return s.after }

// Create makes a link to one of the account's turns (403 for another
// account's, 404 for none). The value is in the result only.
func (s *Service) Create(ctx context.Context, accountID, turnID string, in CreateInput) (Created, error) {
	if in.Language != nil {
		var v platform.Validator
		v.OneOf("language", *in.Language, display.Languages...)
		if err := v.Err(); err != nil {
			return Created{}, err
		}
	}
	var out Created
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		t, err := s.turns.Get(ctx, accountID, turnID)
		if err != nil {
			return err
		}
		exp := ExpiresAt(t.FinishedAt, s.after)
		if exp != nil && !s.clock.Now().Before(*exp) {
			return platform.Conflict(CodeTicketLinkExpired,
				fmt.Sprintf("the turn finished more than %s ago; its ticket page is closed", s.after),
				map[string]any{"turnId": t.ID, "finishedAt": t.FinishedAt.UTC()})
		}
		n, err := s.repo.CountByTurn(ctx, t.ID)
		if err != nil {
			return err
		}
		if n >= MaxLinksPerTurn {
			return platform.Conflict(CodeTooManyTicketLinks, "the turn already has the most ticket links",
				map[string]any{"limit": MaxLinksPerTurn})
		}
		value := newValue()
		l := Link{ID: platform.NewID(PrefixLink), AccountID: accountID, TurnID: t.ID, QueueID: t.QueueID, RunID: t.RunID,
			Hash: Hash(value), Language: in.Language, CreatedAt: s.clock.Now()}
		if err := s.repo.Create(ctx, l); err != nil {
			return err
		}
		out = Created{Link: l, Value: value, ExpiresAt: exp}
		return nil
	})
	return out, err
}

// Resolve returns the link whose value is given and its turn: 404
// INVALID_TICKET_LINK when there is none, 404 TICKET_LINK_EXPIRED when
// its turn finished more than ExpireAfter ago.
func (s *Service) Resolve(ctx context.Context, value string) (Link, turns.View, error) {
	invalid := platform.NewError(platform.KindNotFound, CodeInvalidTicketLink,
		"this ticket link is not valid", nil)
	if !LooksLikeValue(value) {
		return Link{}, turns.View{}, invalid
	}
	l, err := s.repo.GetByHash(ctx, Hash(value))
	if platform.IsCode(err, platform.CodeNotFound) {
		return Link{}, turns.View{}, invalid
	}
	if err != nil {
		return Link{}, turns.View{}, fmt.Errorf("ticket: reading a link: %w", err)
	}
	t, err := s.turns.Get(ctx, l.AccountID, l.TurnID)
	if platform.IsCode(err, platform.CodeNotFound) {
		return Link{}, turns.View{}, invalid // the turn's run was deleted
	}
	if err != nil {
		return Link{}, turns.View{}, fmt.Errorf("ticket: reading the turn: %w", err)
	}
	if exp := ExpiresAt(t.FinishedAt, s.after); exp != nil && !s.clock.Now().Before(*exp) {
		return Link{}, turns.View{}, platform.NewError(platform.KindNotFound, CodeTicketLinkExpired,
			"this ticket has ended and its link has expired", map[string]any{"expiredAt": *exp})
	}
	return l, t, nil
}

// Ticket reads what the page shows now.
func (s *Service) Ticket(ctx context.Context, l Link, t turns.View) (Ticket, error) {
	q, err := s.places.GetQueue(ctx, l.AccountID, t.QueueID)
	if err != nil {
		return Ticket{}, fmt.Errorf("ticket: reading the queue: %w", err)
	}
	run, err := s.places.GetRun(ctx, l.AccountID, t.RunID)
	if err != nil {
		return Ticket{}, fmt.Errorf("ticket: reading the run: %w", err)
	}
	ent, err := s.branches.Get(ctx, l.AccountID, q.EntityID)
	if err != nil {
		return Ticket{}, fmt.Errorf("ticket: reading the branch: %w", err)
	}
	out := Ticket{
		DisplayCode: t.DisplayCode, Status: t.Status,
		Queue:    Place{Name: q.Name, Subtitle: q.Subtitle},
		Branch:   Place{Name: ent.Name},
		CalledAt: t.CalledAt, FinishedAt: t.FinishedAt,
		RunOpen:   run.Status == queues.RunOpen,
		CanLeave:  !t.Status.Finished(),
		Language:  l.Language,
		ExpiresAt: ExpiresAt(t.FinishedAt, s.after),
	}
	if t.Position != nil {
		ahead := *t.Position - 1
		out.Ahead = &ahead
	}
	if t.WaitEstimate != nil {
		m := t.WaitEstimate.Minutes
		out.WaitMinutes = &m
		out.WaitRange = t.WaitEstimate.Range
	}
	if t.Station != nil {
		label := t.Station.Label
		out.Station = &label
	}
	asked, err := s.repo.HelpOfTurn(ctx, t.ID)
	if err != nil {
		return Ticket{}, fmt.Errorf("ticket: reading help requests: %w", err)
	}
	var last *HelpRequest
	if len(asked) > 0 {
		last = &asked[len(asked)-1]
	}
	out.Help = helpOf(q, t, last)
	if turns.ShowsSecurity(q) {
		code := turns.SecurityCode(t.ID)
		out.SecurityCode = &code
	}
	return out, nil
}

// Read resolves a link and reads its ticket.
func (s *Service) Read(ctx context.Context, value string) (Link, Ticket, error) {
	l, t, err := s.Resolve(ctx, value)
	if err != nil {
		return Link{}, Ticket{}, err
	}
	tk, err := s.Ticket(ctx, l, t)
	return l, tk, err
}

// Leave is the customer's own cancel from the ticket page: the turn is
// cancelled through the same rules as any cancel (409 INVALID_TRANSITION
// when it is finished), raising turn.cancelled with reason "customer".
func (s *Service) Leave(ctx context.Context, value string) (Ticket, error) {
	l, _, err := s.Resolve(ctx, value)
	if err != nil {
		return Ticket{}, err
	}
	v, err := s.turns.CancelFor(ctx, l.AccountID, l.TurnID, CancelReason)
	if err != nil {
		return Ticket{}, err
	}
	return s.Ticket(ctx, l, v)
}
