package display

import (
	"context"
	"sort"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Service is the display use cases.
type Service struct {
	repo   Repository
	queues Queues
	turns  Turns
	calls  Calls
	uow    platform.UnitOfWork
	events platform.EventSink
	clock  platform.Clock
	// joining, when set, counts appointments waiting to join (UseJoining).
	joining Joining
}

// UseJoining makes the board's waiting count include the appointments
// waiting to join the line. Call it while wiring.
func (s *Service) UseJoining(j Joining) { s.joining = j }

// NewService builds the service.
// events hears of a token's revocation and changes (TokenChanged), so
// the boards it opened, in every process, end or follow at once.
func NewService(repo Repository, qs Queues, ts Turns, calls Calls, uow platform.UnitOfWork, events platform.EventSink,
	clock platform.Clock) *Service {
	return &Service{repo: repo, queues: qs, turns: ts, calls: calls, uow: uow, events: events, clock: clock}
}

// changed raises TokenChanged for t, in the transaction that changed it.
func (s *Service) changed(ctx context.Context, t Token) error {
	e, err := platform.NewEvent(t.AccountID, TokenChanged{TokenID: t.ID, Revoked: t.Revoked(), Options: t.Options}, s.clock.Now())
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = t.QueueID, t.RunID
	return s.events.Emit(ctx, e)
}

// Create makes a display token for one of the account's runs. The value is
// in the result only.
func (s *Service) Create(ctx context.Context, accountID, runID string, in CreateInput) (Created, error) {
	var v platform.Validator
	v.OptLen("label", in.Label, 1, 80)
	v.OptRange("nextUp", in.NextUp, 0, NextUp)
	if in.Language != nil {
		v.OneOf("language", *in.Language, Languages...)
	}
	if err := v.Err(); err != nil {
		return Created{}, err
	}
	opts := DefaultOptions()
	opts.NextUp = platform.Deref(in.NextUp, opts.NextUp)
	opts.Speech = platform.Deref(in.Speech, opts.Speech)
	opts.Language = in.Language
	var out Created
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		run, err := s.queues.GetRun(ctx, accountID, runID)
		if err != nil {
			return err
		}
		n, err := s.repo.CountLive(ctx, run.ID)
		if err != nil {
			return err
		}
		if n >= MaxTokensPerRun {
			return platform.Conflict(CodeTooManyDisplayTokens,
				"the run already has the most live display tokens; revoke one first",
				map[string]any{"limit": MaxTokensPerRun})
		}
		value := newTokenValue()
		t := Token{ID: platform.NewID(PrefixToken), AccountID: accountID, QueueID: run.QueueID, RunID: run.ID,
			Label: in.Label, Hash: HashToken(value), CreatedAt: s.clock.Now(), Options: opts}
		if err := s.repo.Create(ctx, t); err != nil {
			return err
		}
		out = Created{Token: t, Value: value}
		return nil
	})
	return out, err
}

// List pages through a run's tokens (values are never shown again).
func (s *Service) List(ctx context.Context, accountID, runID string, page platform.PageRequest) (platform.Page[Token], error) {
	run, err := s.queues.GetRun(ctx, accountID, runID)
	if err != nil {
		return platform.Page[Token]{}, err
	}
	items, err := s.repo.ListByRun(ctx, run.ID, page)
	if err != nil {
		return platform.Page[Token]{}, err
	}
	return platform.PageOf(items, page.Limit, func(t Token) string { return t.ID }), nil
}

// Revoke revokes a token: the boards it opened stop as soon as the
// revocation commits (TokenChanged reaches them through the event log, in
// every process) and the link shows that it was revoked. Revoking a
// revoked token changes nothing.
func (s *Service) Revoke(ctx context.Context, accountID, id string) (Token, error) {
	var out Token
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		t, err := s.repo.Get(ctx, id)
		if err != nil {
			return err
		}
		if t.AccountID != accountID {
			return platform.ForeignResource("display token")
		}
		if t.RevokedAt == nil {
			now := s.clock.Now()
			t.RevokedAt = &now
			if err := s.repo.Update(ctx, t); err != nil {
				return err
			}
			if err := s.changed(ctx, t); err != nil {
				return err
			}
		}
		out = t
		return nil
	})
	return out, err
}

// Update changes a token's label and options (PATCH
// /display-tokens/{tokenId}); an open board follows at once (TokenChanged).
// A revoked token can still be updated: it changes nothing it can open.
func (s *Service) Update(ctx context.Context, accountID, id string, in UpdateInput) (Token, error) {
	var v platform.Validator
	if in.Label.Set && !in.Label.Null {
		v.Len("label", in.Label.Value, 1, 80)
	}
	if in.NextUp.Set {
		if in.NextUp.Null {
			v.Fail("nextUp", "type", "must be an integer from 0 to %d", NextUp)
		} else {
			v.Range("nextUp", in.NextUp.Value, 0, NextUp)
		}
	}
	if in.Speech.Set && in.Speech.Null {
		v.Fail("speech", "type", "must be true or false")
	}
	if in.Language.Set && !in.Language.Null {
		v.OneOf("language", in.Language.Value, Languages...)
	}
	if err := v.Err(); err != nil {
		return Token{}, err
	}
	var out Token
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		t, err := s.repo.Get(ctx, id)
		if err != nil {
			return err
		}
		if t.AccountID != accountID {
			return platform.ForeignResource("display token")
		}
		if in.Label.Set {
			t.Label = patchPtr(in.Label)
		}
		if in.NextUp.Set {
			t.NextUp = in.NextUp.Value
		}
		if in.Speech.Set {
			t.Speech = in.Speech.Value
		}
		if in.Language.Set {
			t.Language = patchPtr(in.Language)
		}
		if err := s.repo.Update(ctx, t); err != nil {
			return err
		}
		if err := s.changed(ctx, t); err != nil {
			return err
		}
		out = t
		return nil
	})
	return out, err
}

func patchPtr[T any](p platform.Patch[T]) *T {
	if p.Null {
		return nil
	}
	return &p.Value
}

// Resolve returns the live token whose value is given: 404
// INVALID_DISPLAY_TOKEN when there is none, 410 DISPLAY_TOKEN_REVOKED when
// it was revoked (the link existed and is withdrawn for good). The token
// in the address is the resource, so these are not 401s: there are no
// credentials that would make the request succeed.
func (s *Service) Resolve(ctx context.Context, value string) (Token, error) {
	invalid := platform.NewError(platform.KindNotFound, CodeInvalidDisplayToken,
		"this display link is not valid; ask for a new one", nil)
	if !LooksLikeToken(value) {
		return Token{}, invalid
	}
	t, err := s.repo.GetByHash(ctx, HashToken(value))
	if platform.IsCode(err, platform.CodeNotFound) {
		return Token{}, invalid
	}
	if err != nil {
		return Token{}, err
	}
	if t.Revoked() {
		return Token{}, platform.NewError(platform.KindGone, CodeDisplayTokenRevoked,
			"this display link has been revoked", map[string]any{"revokedAt": t.RevokedAt.UTC()})
	}
	return t, nil
}

// Board reads what the token's screen shows now.
func (s *Service) Board(ctx context.Context, t Token) (Board, error) {
	b, err := s.RunBoard(ctx, t.AccountID, t.RunID)
	if err != nil {
		return Board{}, err
	}
	return b.For(t), nil
}

// For is the board as the token's screen shows it: with its options.
func (b Board) For(t Token) Board {
	b.Options = t.Options
	return b
}

// RunBoard reads what every board of the run shows now, the screens'
// options aside (see For): the board streams build it once per event of
// the run for all of the run's boards.
func (s *Service) RunBoard(ctx context.Context, accountID, runID string) (Board, error) {
	run, err := s.queues.GetRun(ctx, accountID, runID)
	if err != nil {
		return Board{}, err
	}
	q, err := s.queues.GetQueue(ctx, accountID, run.QueueID)
	if err != nil {
		return Board{}, err
	}
	t := Token{AccountID: accountID, QueueID: run.QueueID, RunID: runID}
	sts, err := s.queues.ListStations(ctx, t.AccountID, q.ID)
	if err != nil {
		return Board{}, err
	}
	stations := make(map[string]BoardStation, len(sts))
	for _, st := range sts {
		stations[st.ID] = BoardStation{ID: st.ID, Label: st.Label}
	}
	b := Board{
		Queue:        BoardQueue{ID: q.ID, Name: q.Name, Subtitle: q.Subtitle},
		Run:          BoardRun{ID: run.ID, Status: run.Status, IntakeOpen: run.IntakeOpen},
		Columns:      columns(q),
		ShowSecurity: turns.ShowsSecurity(q),
		Calling:      []BoardTurn{},
		Recent:       []BoardTurn{},
		GeneratedAt:  s.clock.Now(),
	}

	page := platform.PageRequest{Limit: platform.MaxPageLimit}
	calling := map[string]bool{}
	for {
		p, err := s.turns.List(ctx, t.AccountID, run.ID, turns.ListFilter{Statuses: []turns.Status{turns.Called}}, page)
		if err != nil {
			return Board{}, err
		}
		for _, v := range p.Items {
			bt := BoardTurn{TurnID: v.ID, DisplayCode: v.DisplayCode, CalledAt: v.CalledAt, Columns: map[string]string{}}
			if b.ShowSecurity {
				bt.SecurityCode = platform.Ptr(turns.SecurityCode(v.ID))
			}
			if v.Station != nil {
				bt.Station = &BoardStation{ID: v.Station.ID, Label: v.Station.Label}
			}
			for _, c := range b.Columns {
				if val, ok := v.FormResponse[c.Key]; ok {
					bt.Columns[c.Key] = val
				}
			}
			b.Calling = append(b.Calling, bt)
			calling[v.ID] = true
		}
		if p.Next == "" {
			break
		}
		page.After = p.Next
	}
	sort.SliceStable(b.Calling, func(i, j int) bool { return later(b.Calling[i].CalledAt, b.Calling[j].CalledAt) })

	page = platform.PageRequest{Limit: platform.MaxPageLimit}
	var over *int
	var maxWait time.Duration
	if m := q.SLA.MaxWaitMinutes; m != nil {
		over, maxWait = new(int), time.Duration(*m)*time.Minute
		b.Waiting.OverSLA, b.Waiting.MaxWaitMinutes = over, m
	}
	var last *turns.View
	var ahead []turns.View
	for {
		p, err := s.turns.List(ctx, t.AccountID, run.ID, turns.ListFilter{Statuses: []turns.Status{turns.Waiting}}, page)
		if err != nil {
			return Board{}, err
		}
		for i := range p.Items {
			v := p.Items[i]
			b.Waiting.Count++
			if over != nil && overSLA(v, b.GeneratedAt, maxWait) {
				*over++
			}
			if v.Position != nil {
				ahead = append(ahead, v)
			}
			if last == nil || v.Position != nil && (last.Position == nil || *v.Position > *last.Position) {
				last = &v
			}
		}
		if p.Next == "" {
			break
		}
		page.After = p.Next
	}
	if s.joining != nil {
		// Checked in for an appointment, due, and the run closed: they
		// wait in the room and join the line when it opens (issue 23).
		n, err := s.joining.CountJoining(ctx, run.ID, s.clock.Now())
		if err != nil {
			return Board{}, err
		}
		b.Waiting.Count += n
	}
	sort.SliceStable(ahead, func(i, j int) bool { return *ahead[i].Position < *ahead[j].Position })
	b.Waiting.Next, b.Waiting.NextOverSLA = []string{}, []string{}
	for _, v := range ahead[:min(len(ahead), NextUp)] {
		b.Waiting.Next = append(b.Waiting.Next, v.DisplayCode)
		if over != nil && overSLA(v, b.GeneratedAt, maxWait) {
			b.Waiting.NextOverSLA = append(b.Waiting.NextOverSLA, v.DisplayCode)
		}
	}
	if last != nil && last.WaitEstimate != nil {
		m := last.WaitEstimate.Minutes
		b.Waiting.WaitMinutes = &m
		b.Waiting.WaitRange = last.WaitEstimate.Range
	}

	evs, err := s.calls.RecentCalls(ctx, t.AccountID, run.ID, RecentCalls+len(calling)+RecentCalls)
	if err != nil {
		return Board{}, err
	}
	seen := map[string]bool{}
	for _, e := range evs {
		var call turns.TurnCalled
		if err := e.Decode(&call); err != nil {
			return Board{}, err
		}
		id, code := call.TurnID, call.DisplayCode
		if id == "" || calling[id] || seen[id] {
			continue
		}
		seen[id] = true
		at := e.OccurredAt
		bt := BoardTurn{TurnID: id, DisplayCode: code, CalledAt: &at, Columns: map[string]string{}}
		if st, ok := stations[platform.Deref(call.StationID, "")]; ok {
			bt.Station = &st
		}
		b.Recent = append(b.Recent, bt)
		if len(b.Recent) == RecentCalls {
			break
		}
	}
	return b, nil
}

// overSLA reports whether a waiting turn has waited maxWait by now: the
// rule of turn.sla_breached, which fires at that moment.
func overSLA(v turns.View, now time.Time, maxWait time.Duration) bool {
	return !now.Before(v.CreatedAt.Add(maxWait))
}

func columns(q queues.Queue) []Column {
	out := []Column{}
	if q.ArrivalBoard == nil {
		return out
	}
	for _, c := range q.ArrivalBoard.Columns {
		if c.Key == nil || c.Label == nil {
			continue
		}
		out = append(out, Column{Key: *c.Key, Label: *c.Label})
	}
	return out
}

// later orders newest first, unknown times last.
func later(a, b *time.Time) bool {
	if a == nil {
		return false
	}
	if b == nil {
		return true
	}
	return a.After(*b)
}
