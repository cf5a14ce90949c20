package ticket

import (
	"context"
	"fmt"
	"time"

	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/entities"
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
	t, err := s.TurnOf(ctx, l)
	if err != nil {
		return Link{}, turns.View{}, err
	}
	return l, t, nil
}

// TurnOf reads the turn of a link already resolved (ResolveLink), with
// Resolve's errors: 404 INVALID_TICKET_LINK when the turn is gone, 404
// TICKET_LINK_EXPIRED when its link has expired.
func (s *Service) TurnOf(ctx context.Context, l Link) (turns.View, error) {
	t, err := s.turns.Get(ctx, l.AccountID, l.TurnID)
	if platform.IsCode(err, platform.CodeNotFound) {
		return turns.View{}, invalidLink() // the turn's run was deleted
	}
	if err != nil {
		return turns.View{}, fmt.Errorf("ticket: reading the turn: %w", err)
	}
	if exp := ExpiresAt(t.FinishedAt, s.after); exp != nil && !s.clock.Now().Before(*exp) {
		return turns.View{}, platform.NewError(platform.KindNotFound, CodeTicketLinkExpired,
			"this ticket has ended and its link has expired", map[string]any{"expiredAt": *exp})
	}
	return t, nil
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
	last, err := s.LastHelp(ctx, t.ID)
	if err != nil {
		return Ticket{}, err
	}
	return s.ticketOf(l, t, q, run, ent, last), nil
}

// LastHelp is a turn's latest help request, nil for none.
func (s *Service) LastHelp(ctx context.Context, turnID string) (*HelpRequest, error) {
	asked, err := s.repo.HelpOfTurn(ctx, turnID)
	if err != nil {
		return nil, fmt.Errorf("ticket: reading help requests: %w", err)
	}
	if len(asked) == 0 {
		return nil, nil
	}
	return &asked[len(asked)-1], nil
}

// RunView is one run's tickets as of one of its events: what every ticket
// page of the run open in this process is drawn from (stream.Runs builds
// it once per event, not once per page).
type RunView struct {
	Queue  queues.Queue
	Run    queues.Run
	Branch entities.Entity
	// Waiting are the views of the run's waiting turns (position, wait
	// estimate), by turn id.
	Waiting map[string]turns.View
	// Changed are the views of the turns the events named that are not
	// waiting (called, finished), by turn id.
	Changed map[string]turns.View
	// Help are the latest help requests (nil: none) of the turns the
	// events named, by turn id: a help request changes only with an event
	// naming its turn.
	Help map[string]*HelpRequest
	// allHelp is the latest help request of every turn of the run that
	// has one, by turn id: read whole when the view starts, then carried
	// from view to view with Help's changes (never written once built,
	// so views share it while no help changes). A page that connects
	// takes its turn's from here, without a read (LatestHelp).
	allHelp map[string]*HelpRequest
}

// LatestHelp is turn turnID's latest help request as of the view, nil for
// none.
func (rv *RunView) LatestHelp(turnID string) *HelpRequest { return rv.allHelp[turnID] }

// runHelp reads the latest help request of each of the run's turns.
func (s *Service) runHelp(ctx context.Context, runID string) (map[string]*HelpRequest, error) {
	out := map[string]*HelpRequest{}
	page := platform.PageRequest{Limit: platform.MaxPageLimit}
	for {
		hs, err := s.repo.ListHelp(ctx, runID, "", page)
		if err != nil {
			return nil, fmt.Errorf("ticket: reading the run's help requests: %w", err)
		}
		more := len(hs) > page.Limit
		if more {
			hs = hs[:page.Limit]
		}
		for i := range hs {
			out[hs[i].TurnID] = &hs[i] // by id: the last is the latest
		}
		if !more || len(hs) == 0 {
			return out, nil
		}
		page.After = hs[len(hs)-1].ID
	}
}

// BuildRun reads a run's view after events naming turnIDs, prev being the
// view before them (nil for the first): the queue, run and branch, the
// waiting line, the named turns that are not in it and their help
// requests; the other turns' help requests are prev's (read whole when
// prev is nil).
func (s *Service) BuildRun(ctx context.Context, accountID, runID string, prev *RunView, turnIDs []string) (*RunView, error) {
	run, err := s.places.GetRun(ctx, accountID, runID)
	if err != nil {
		return nil, fmt.Errorf("ticket: reading the run: %w", err)
	}
	q, err := s.places.GetQueue(ctx, accountID, run.QueueID)
	if err != nil {
		return nil, fmt.Errorf("ticket: reading the queue: %w", err)
	}
	ent, err := s.branches.Get(ctx, accountID, q.EntityID)
	if err != nil {
		return nil, fmt.Errorf("ticket: reading the branch: %w", err)
	}
	rv := &RunView{Queue: q, Run: run, Branch: ent, Waiting: map[string]turns.View{}}
	page := platform.PageRequest{Limit: platform.MaxPageLimit}
	for {
		p, err := s.turns.List(ctx, accountID, runID, turns.ListFilter{Statuses: []turns.Status{turns.Waiting}}, page)
		if err != nil {
			return nil, fmt.Errorf("ticket: reading the line: %w", err)
		}
		for _, v := range p.Items {
			rv.Waiting[v.ID] = v
		}
		if p.Next == "" {
			break
		}
		page.After = p.Next
	}
	for _, id := range turnIDs {
		if _, done := rv.Help[id]; done || id == "" {
			continue
		}
		last, err := s.LastHelp(ctx, id)
		if err != nil {
			return nil, err
		}
		if rv.Help == nil {
			rv.Help = map[string]*HelpRequest{}
		}
		rv.Help[id] = last
		if _, waiting := rv.Waiting[id]; waiting {
			continue
		}
		v, err := s.turns.Get(ctx, accountID, id)
		switch {
		case platform.IsCode(err, platform.CodeNotFound):
		case err != nil:
			return nil, fmt.Errorf("ticket: reading the turn: %w", err)
		default:
			if rv.Changed == nil {
				rv.Changed = map[string]turns.View{}
			}
			rv.Changed[id] = v
		}
	}
	if prev == nil {
		if rv.allHelp, err = s.runHelp(ctx, runID); err != nil {
			return nil, err
		}
		return rv, nil
	}
	rv.allHelp = prev.allHelp
	// A copy only when a named turn has or had a help request: most
	// events (calls, joins) touch none, and share prev's.
	changed := false
	for id, h := range rv.Help {
		changed = changed || h != nil || prev.allHelp[id] != nil
	}
	if changed {
		rv.allHelp = make(map[string]*HelpRequest, len(prev.allHelp)+len(rv.Help))
		for id, h := range prev.allHelp {
			rv.allHelp[id] = h
		}
		for id, h := range rv.Help {
			if h == nil {
				delete(rv.allHelp, id)
			} else {
				rv.allHelp[id] = h
			}
		}
	}
	return rv, nil
}

// Own is a turn's latest view given the run's view: from the line while
// it waits, the run's changed turn when it is that one, else t (the turn
// has not changed since).
func (rv *RunView) Own(t turns.View) turns.View {
	if v, ok := rv.Waiting[t.ID]; ok {
		return v
	}
	if v, ok := rv.Changed[t.ID]; ok {
		return v
	}
	return t
}

// TicketOf is what the page shows for the link's turn t with its latest
// help request last, drawn from the run's view without a read.
func (s *Service) TicketOf(l Link, t turns.View, rv *RunView, last *HelpRequest) Ticket {
	return s.ticketOf(l, t, rv.Queue, rv.Run, rv.Branch, last)
}

// OwnHelp is a turn's latest help request given the run's view: the
// view's when an event named the turn, else last (unchanged since).
func (rv *RunView) OwnHelp(turnID string, last *HelpRequest) *HelpRequest {
	if h, ok := rv.Help[turnID]; ok {
		return h
	}
	return last
}

// Expired reports whether the link of turn t has expired at now.
func (s *Service) Expired(t turns.View) bool {
	exp := ExpiresAt(t.FinishedAt, s.after)
	return exp != nil && !s.clock.Now().Before(*exp)
}

// ExpiresIn is how long until the link of turn t expires; ok is false
// while the turn has not finished (no expiry yet).
func (s *Service) ExpiresIn(t turns.View) (d time.Duration, ok bool) {
	exp := ExpiresAt(t.FinishedAt, s.after)
	if exp == nil {
		return 0, false
	}
	return exp.Sub(s.clock.Now()), true
}

// ResolveLink returns the link whose value is given, without its turn:
// 404 INVALID_TICKET_LINK when there is none.
func (s *Service) ResolveLink(ctx context.Context, value string) (Link, error) {
	if !LooksLikeValue(value) {
		return Link{}, invalidLink()
	}
	l, err := s.repo.GetByHash(ctx, Hash(value))
	if platform.IsCode(err, platform.CodeNotFound) {
		return Link{}, invalidLink()
	}
	if err != nil {
		return Link{}, fmt.Errorf("ticket: reading a link: %w", err)
	}
	return l, nil
}

func invalidLink() error {
	return platform.NewError(platform.KindNotFound, CodeInvalidTicketLink, "this ticket link is not valid", nil)
}

// ExpiredError is the error of a link whose turn finished more than
// ExpireAfter ago.
func (s *Service) ExpiredError(t turns.View) error {
	return platform.NewError(platform.KindNotFound, CodeTicketLinkExpired,
		"this ticket has ended and its link has expired", map[string]any{"expiredAt": *ExpiresAt(t.FinishedAt, s.after)})
}

// ticketOf is what the page shows, from what was read: last is the turn's
// latest help request (nil for none).
func (s *Service) ticketOf(l Link, t turns.View, q queues.Queue, run queues.Run, ent entities.Entity, last *HelpRequest) Ticket {
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
	out.Help = helpOf(q, t, last)
	if turns.ShowsSecurity(q) {
		code := turns.SecurityCode(t.ID)
		out.SecurityCode = &code
	}
	return out
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
