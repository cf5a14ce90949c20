package counter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
)

// Service is the counter use cases.
type Service struct {
	repo   Repository
	queues Queues
	turns  Turns
	links  Links
	help   Help
	uow    platform.UnitOfWork
	events platform.EventSink
	clock  platform.Clock
}

// NewService builds the service. events hears of a link's revocation
// (LinkRevoked), so the consoles it opened, in every process, end at once.
func NewService(repo Repository, qs Queues, ts Turns, ls Links, help Help, uow platform.UnitOfWork,
	events platform.EventSink, clock platform.Clock) *Service {
	return &Service{repo: repo, queues: qs, turns: ts, links: ls, help: help, uow: uow, events: events, clock: clock}
}

// Create makes a counter link for one of the account's queues. The value
// is in the result only.
func (s *Service) Create(ctx context.Context, accountID, queueID string, in CreateInput) (Created, error) {
	var v platform.Validator
	v.OptLen("label", in.Label, 1, 80)
	if in.Language != nil {
		v.OneOf("language", *in.Language, Languages...)
	}
	v.MaxItems("stationIds", len(in.StationIDs), 100)
	for i, id := range in.StationIDs {
		v.Len(platform.Index("stationIds", i), id, 1, 128)
	}
	if err := v.Err(); err != nil {
		return Created{}, err
	}
	var out Created
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		qv, err := s.queues.Get(ctx, accountID, queueID)
		if err != nil {
			return err
		}
		if qv.Type == queues.TypeAppointment {
			return platform.Unprocessable(turns.CodeNotATurnQueue, "the queue takes appointments, not turns: it has no counter",
				map[string]any{"queueId": qv.ID, "type": qv.Type})
		}
		ids, err := stationsOf(qv, in.StationIDs)
		if err != nil {
			return err
		}
		n, err := s.repo.CountLiveLinks(ctx, qv.ID)
		if err != nil {
			return err
		}
		if n >= MaxLinksPerQueue {
			return platform.Conflict(CodeTooManyCounterLinks,
				"the queue already has the most live counter links; revoke one first",
				map[string]any{"limit": MaxLinksPerQueue})
		}
		value := newTokenValue()
		l := Link{ID: platform.NewID(PrefixLink), AccountID: accountID, QueueID: qv.ID, Label: in.Label,
			Hash: HashToken(value), CreatedAt: s.clock.Now(),
			Options: Options{Language: in.Language, StationIDs: ids, ShowDetails: platform.Deref(in.ShowDetails, false)}}
		if err := s.repo.CreateLink(ctx, l); err != nil {
			return err
		}
		out = Created{Link: l, Value: value}
		return nil
	})
	return out, err
}

// stationsOf checks that every id names a station of the queue, once.
func stationsOf(qv queues.QueueView, ids []string) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	var v platform.Validator
	for i, id := range ids {
		found := false
		for _, st := range qv.Stations {
			found = found || st.ID == id
		}
		if !found {
			v.Fail(platform.Index("stationIds", i), "station", "must be a station of the queue")
			continue
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, v.Err()
}

// List pages through a queue's links (values are never shown again).
func (s *Service) List(ctx context.Context, accountID, queueID string, page platform.PageRequest) (platform.Page[Link], error) {
	q, err := s.queues.GetQueue(ctx, accountID, queueID)
	if err != nil {
		return platform.Page[Link]{}, err
	}
	items, err := s.repo.ListLinks(ctx, q.ID, page)
	if err != nil {
		return platform.Page[Link]{}, err
	}
	return platform.PageOf(items, page.Limit, func(l Link) string { return l.ID }), nil
}

// Revoke revokes a link: the consoles it opened stop as soon as the
// revocation commits (LinkRevoked reaches them through the event log, in
// every process) and every press after is refused. Revoking a revoked
// link changes nothing.
func (s *Service) Revoke(ctx context.Context, accountID, id string) (Link, error) {
	var out Link
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		l, err := s.repo.GetLink(ctx, id)
		if err != nil {
			return err
		}
		if l.AccountID != accountID {
			return platform.ForeignResource("counter link")
		}
		if l.RevokedAt == nil {
			now := s.clock.Now()
			l.RevokedAt = &now
			if err := s.repo.UpdateLink(ctx, l); err != nil {
				return err
			}
			e, err := platform.NewEvent(l.AccountID, LinkRevoked{LinkID: l.ID}, now)
			if err != nil {
				return err
			}
			e.QueueID = l.QueueID
			if err := s.events.Emit(ctx, e); err != nil {
				return err
			}
		}
		out = l
		return nil
	})
	return out, err
}

// Resolve returns the live link whose value is given: 404
// INVALID_COUNTER_LINK when there is none, 410 COUNTER_LINK_REVOKED when
// it was revoked.
func (s *Service) Resolve(ctx context.Context, value string) (Link, error) {
	invalid := platform.NewError(platform.KindNotFound, CodeInvalidCounterLink,
		"this counter link is not valid; ask for a new one", nil)
	if !LooksLikeToken(value) {
		return Link{}, invalid
	}
	l, err := s.repo.GetLinkByHash(ctx, HashToken(value))
	if platform.IsCode(err, platform.CodeNotFound) {
		return Link{}, invalid
	}
	if err != nil {
		return Link{}, err
	}
	if l.Revoked() {
		return Link{}, platform.NewError(platform.KindGone, CodeCounterLinkRevoked,
			"this counter link has been revoked", map[string]any{"revokedAt": l.RevokedAt.UTC()})
	}
	return l, nil
}

// History is a turn's presses at the counters, oldest first, for the
// account's API (GET /turns/{turnId}/counter-presses).
func (s *Service) History(ctx context.Context, accountID, turnID string) ([]Press, error) {
	t, err := s.turns.Turn(ctx, accountID, turnID)
	if err != nil {
		return nil, err
	}
	return s.repo.PressesOfTurn(ctx, t.ID)
}

// PressInput is one press of a console button: the action, the key the
// console made for this press, and what the action needs.
type PressInput struct {
	// Key is made once per press (8 to 64 characters): a repeat replays
	// the first answer.
	Key       *string `json:"key"`
	Action    *Action `json:"action"`
	TurnID    *string `json:"turnId"`
	StationID *string `json:"stationId"`
	// Priority is the new priority (priority).
	Priority *queues.Priority `json:"priority"`
	// LinkID is the connected-queue link to forward through (forward).
	LinkID *string `json:"linkId"`
	// WalkIn is the new turn's body (walk-in): the API's turn body,
	// questions' answers included; its idempotencyKey is the press's.
	WalkIn *WalkIn `json:"walkIn"`
}

// WalkIn is the body of a walk-in: the turn create body without its key.
type WalkIn struct {
	PeopleCount    *int              `json:"peopleCount"`
	Phone          *string           `json:"phone"`
	NotifyWhatsapp *bool             `json:"notifyWhatsapp"`
	FormResponse   map[string]string `json:"formResponse" text:"free"`
}

// Validate checks the press's shape; the turn module checks the rest.
func (in *PressInput) Validate() error {
	var v platform.Validator
	if v.Required("key", in.Key != nil) {
		v.Len("key", *in.Key, 8, 64)
	}
	if v.Required("action", in.Action != nil) && !in.Action.Valid() {
		names := make([]string, len(Actions))
		for i, a := range Actions {
			names[i] = string(a)
		}
		v.OneOf("action", string(*in.Action), names...)
	}
	v.OptLen("stationId", in.StationID, 1, 128)
	v.OptLen("turnId", in.TurnID, 1, 128)
	if in.Action != nil && in.Action.Valid() {
		a := *in.Action
		if a.needsTurn() && v.Required("turnId", in.TurnID != nil) {
			v.Len("turnId", *in.TurnID, 1, 128)
		}
		if a == ActPriority && v.Required("priority", in.Priority != nil) && !in.Priority.Valid() {
			v.OneOf("priority", string(*in.Priority), queues.Priorities...)
		}
		if a == ActForward && v.Required("linkId", in.LinkID != nil) {
			v.Len("linkId", *in.LinkID, 1, 128)
		}
	}
	return v.Err()
}

// hash identifies what a press asked for, so a repeat of its key can be
// told from a reuse for another request.
func (in PressInput) hash() string {
	n := in
	n.Key = nil
	b, _ := json.Marshal(n)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Result is the answer to a press: the turn it acted on as it is now,
// and whether this was the replay of an earlier press with the key.
type Result struct {
	Action   Action      `json:"action"`
	Turn     *turns.View `json:"turn"`
	Replayed bool        `json:"replayed"`
	// Forward is the forward a forward press made.
	Forward *workflow.Forward `json:"forward,omitempty"`
}

// PressesFor is a turn's presses for the link's console: a turn of its
// queue only (another's is 404).
func (s *Service) PressesFor(ctx context.Context, l Link, turnID string) ([]Press, error) {
	t, err := s.turns.Turn(ctx, l.AccountID, turnID)
	if err != nil || t.QueueID != l.QueueID {
		if err == nil || platform.IsCode(err, platform.CodeNotFound) || platform.IsCode(err, platform.CodeForbidden) {
			return nil, platform.NotFound("turn", turnID)
		}
		return nil, err
	}
	ps, err := s.repo.PressesOfTurn(ctx, t.ID)
	if ps == nil {
		ps = []Press{}
	}
	return ps, err
}
