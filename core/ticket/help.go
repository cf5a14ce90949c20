package ticket

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Help is the queue's help option (spec 2.1 help: enabled, quickReplies)
// made real: a customer asks for help from the ticket page ("I need
// help"), staff see the open requests of a run and answer each with one of
// the queue's quickReplies, and the ticket page shows the answer live.
// Each step raises an event (turn.help_requested, turn.help_answered), so
// a counter console or an integrator's webhook sees it at once.

// PrefixHelp begins every help request id.
const PrefixHelp = "hlp"

// Help request statuses.
const (
	// HelpOpen: the customer asked; no one has answered yet.
	HelpOpen = "OPEN"
	// HelpAnswered: staff answered with one of the quickReplies.
	HelpAnswered = "ANSWERED"
)

// Event names of help (beyond spec section 6: a compatible addition,
// subscribable by webhooks like the others).
const (
	EventHelpRequested = "turn.help_requested"
	EventHelpAnswered  = "turn.help_answered"
)

// Codes raised by help.
const (
	// CodeHelpDisabled: the turn's queue has help.enabled false. 409.
	CodeHelpDisabled = "HELP_DISABLED"
	// CodeHelpTurnFinished: the turn is finished; there is no one to help. 409.
	CodeHelpTurnFinished = "TURN_FINISHED"
	// CodeTooManyHelpRequests: the turn asked MaxHelpPerTurn times. 409.
	CodeTooManyHelpRequests = "TOO_MANY_HELP_REQUESTS"
	// CodeNotAQuickReply: the reply is not one of the queue's
	// help.quickReplies. 422, details.field "reply".
	CodeNotAQuickReply = "NOT_A_QUICK_REPLY"
	// CodeHelpAlreadyAnswered: the request was answered with another
	// reply. 409.
	CodeHelpAlreadyAnswered = "HELP_ALREADY_ANSWERED"
)

// MaxHelpPerTurn bounds the help requests of one turn: the page is
// public, and a customer asking again and again must not flood the
// counter.
const MaxHelpPerTurn = 10

// HelpRequest is one "I need help" of a turn.
type HelpRequest struct {
	ID          string     `json:"id"`
	AccountID   string     `json:"-"`
	TurnID      string     `json:"turnId"`
	QueueID     string     `json:"queueId"`
	RunID       string     `json:"queueRunId"`
	DisplayCode string     `json:"displayCode"`
	Status      string     `json:"status"`
	Reply       *string    `json:"reply"`
	RequestedAt time.Time  `json:"requestedAt"`
	AnsweredAt  *time.Time `json:"answeredAt"`
}

// HelpRequestedData is the data of turn.help_requested. Fields in the byte
// order of their JSON names, like every payload.
type HelpRequestedData struct {
	DisplayCode   string    `json:"displayCode"`
	HelpRequestID string    `json:"helpRequestId"`
	QueueID       string    `json:"queueId"`
	QueueRunID    string    `json:"queueRunId"`
	RequestedAt   time.Time `json:"requestedAt"`
	TurnID        string    `json:"turnId"`
}

// EventName is the event this payload is the data of.
func (HelpRequestedData) EventName() string { return EventHelpRequested }

// HelpAnsweredData is the data of turn.help_answered: Reply is the quick
// reply staff chose.
type HelpAnsweredData struct {
	AnsweredAt    time.Time `json:"answeredAt"`
	DisplayCode   string    `json:"displayCode"`
	HelpRequestID string    `json:"helpRequestId"`
	QueueID       string    `json:"queueId"`
	QueueRunID    string    `json:"queueRunId"`
	Reply         string    `json:"reply"`
	TurnID        string    `json:"turnId"`
}

// EventName is the event this payload is the data of.
func (HelpAnsweredData) EventName() string { return EventHelpAnswered }

// AnswerInput is the body of POST /help-requests/{id}/answer.
type AnswerInput struct {
	Reply *string `json:"reply"`
}

// HelpListFilter narrows a run's help requests.
type HelpListFilter struct {
	// Status, when set, keeps one status (OPEN or ANSWERED).
	Status string
}

// TicketHelp is what the ticket page shows of help: whether it may ask
// now, and its latest request with the answer once there is one.
type TicketHelp struct {
	Available bool            `json:"available"`
	Request   *TicketHelpLast `json:"request"`
}

// TicketHelpLast is the customer's latest request, without staff-side ids.
type TicketHelpLast struct {
	Status      string     `json:"status"`
	Reply       *string    `json:"reply"`
	RequestedAt time.Time  `json:"requestedAt"`
	AnsweredAt  *time.Time `json:"answeredAt"`
}

// helpOf is the ticket's help member: nil when the queue has help off and
// the turn never asked.
func helpOf(q queues.Queue, t turns.View, last *HelpRequest) *TicketHelp {
	enabled := q.Help.Enabled != nil && *q.Help.Enabled
	if !enabled && last == nil {
		return nil
	}
	h := &TicketHelp{Available: enabled && !t.Status.Finished() && (last == nil || last.Status != HelpOpen)}
	if last != nil {
		h.Request = &TicketHelpLast{Status: last.Status, Reply: last.Reply, RequestedAt: last.RequestedAt, AnsweredAt: last.AnsweredAt}
	}
	return h
}

// AskHelp is the customer's "I need help" from the ticket page: it opens a
// help request of the link's turn and raises turn.help_requested. Asking
// while a request is open returns that request (nothing new, no event).
// 409 HELP_DISABLED when the queue has help off, TURN_FINISHED when the
// turn is finished, TOO_MANY_HELP_REQUESTS after MaxHelpPerTurn.
func (s *Service) AskHelp(ctx context.Context, value string) (Ticket, error) {
	l, _, err := s.Resolve(ctx, value)
	if err != nil {
		return Ticket{}, err
	}
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		t, err := s.turns.Get(ctx, l.AccountID, l.TurnID)
		if err != nil {
			return err
		}
		q, err := s.places.GetQueue(ctx, l.AccountID, t.QueueID)
		if err != nil {
			return err
		}
		if q.Help.Enabled == nil || !*q.Help.Enabled {
			return platform.Conflict(CodeHelpDisabled, "this queue does not take help requests", nil)
		}
		if t.Status.Finished() {
			return platform.Conflict(CodeHelpTurnFinished, "the turn is finished", map[string]any{"status": t.Status})
		}
		n, err := s.repo.CountHelpOfTurn(ctx, t.ID)
		if err != nil {
			return err
		}
		if n >= MaxHelpPerTurn {
			return platform.Conflict(CodeTooManyHelpRequests, "this turn has asked for help too many times",
				map[string]any{"limit": MaxHelpPerTurn})
		}
		now := s.clock.Now()
		h := HelpRequest{ID: platform.NewID(PrefixHelp), AccountID: l.AccountID, TurnID: t.ID, QueueID: t.QueueID,
			RunID: t.RunID, DisplayCode: t.DisplayCode, Status: HelpOpen, RequestedAt: now}
		created, err := s.repo.CreateHelp(ctx, h)
		if err != nil || !created {
			return err // !created: a request is open already, which stands
		}
		return s.emitHelp(ctx, h, HelpRequestedData{DisplayCode: h.DisplayCode, HelpRequestID: h.ID, QueueID: h.QueueID,
			QueueRunID: h.RunID, RequestedAt: now, TurnID: h.TurnID})
	})
	if err != nil {
		return Ticket{}, err
	}
	_, tk, err := s.Read(ctx, value)
	return tk, err
}

func (s *Service) emitHelp(ctx context.Context, h HelpRequest, payload platform.Payload) error {
	e, err := platform.NewEvent(h.AccountID, payload, s.clock.Now())
	if err != nil {
		return err
	}
	e.QueueID, e.RunID = h.QueueID, h.RunID
	return s.events.Emit(ctx, e)
}

// AnswerHelp answers a help request of the account with one of its
// queue's quickReplies (422 NOT_A_QUICK_REPLY otherwise) and raises
// turn.help_answered. Answering again with the same reply returns the
// request as it is (a retried click); with another reply, 409
// HELP_ALREADY_ANSWERED.
func (s *Service) AnswerHelp(ctx context.Context, accountID, id string, in AnswerInput) (HelpRequest, error) {
	var v platform.Validator
	if v.Required("reply", in.Reply != nil) {
		v.Len("reply", *in.Reply, 1, 120)
	}
	if err := v.Err(); err != nil {
		return HelpRequest{}, err
	}
	var out HelpRequest
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		h, err := s.repo.GetHelpForUpdate(ctx, id)
		if err != nil {
			return err
		}
		if h.AccountID != accountID {
			return platform.ForeignResource("help request")
		}
		if h.Status == HelpAnswered {
			if *h.Reply == *in.Reply {
				out = h
				return nil
			}
			return platform.Conflict(CodeHelpAlreadyAnswered, "the request was answered already",
				map[string]any{"reply": *h.Reply})
		}
		q, err := s.places.GetQueue(ctx, accountID, h.QueueID)
		if err != nil {
			return err
		}
		if !slices.Contains(q.Help.QuickReplies, *in.Reply) {
			return platform.Unprocessable(CodeNotAQuickReply, "reply must be one of the queue's help.quickReplies",
				map[string]any{"field": "reply", "quickReplies": q.Help.QuickReplies})
		}
		now := s.clock.Now()
		h.Status, h.Reply, h.AnsweredAt = HelpAnswered, platform.Ptr(*in.Reply), &now
		if err := s.repo.UpdateHelp(ctx, h); err != nil {
			return err
		}
		out = h
		return s.emitHelp(ctx, h, HelpAnsweredData{AnsweredAt: now, DisplayCode: h.DisplayCode, HelpRequestID: h.ID,
			QueueID: h.QueueID, QueueRunID: h.RunID, Reply: *h.Reply, TurnID: h.TurnID})
	})
	return out, err
}

// GetHelp returns a help request of the account.
func (s *Service) GetHelp(ctx context.Context, accountID, id string) (HelpRequest, error) {
	h, err := s.repo.GetHelp(ctx, id)
	if err != nil {
		return HelpRequest{}, err
	}
	if h.AccountID != accountID {
		return HelpRequest{}, platform.ForeignResource("help request")
	}
	return h, nil
}

// RunHelp pages through the help requests of a run of the account, oldest
// first (the one waiting longest on top), of one status when f names it.
func (s *Service) RunHelp(ctx context.Context, accountID, runID string, f HelpListFilter, page platform.PageRequest) (platform.Page[HelpRequest], error) {
	if f.Status != "" {
		var v platform.Validator
		v.OneOf("status", f.Status, HelpOpen, HelpAnswered)
		if err := v.Err(); err != nil {
			return platform.Page[HelpRequest]{}, err
		}
	}
	if _, err := s.places.GetRun(ctx, accountID, runID); err != nil {
		return platform.Page[HelpRequest]{}, err
	}
	items, err := s.repo.ListHelp(ctx, runID, f.Status, page)
	if err != nil {
		return platform.Page[HelpRequest]{}, fmt.Errorf("ticket: listing help requests: %w", err)
	}
	return platform.PageOf(items, page.Limit, func(h HelpRequest) string { return h.ID }), nil
}

// TurnHelp lists the help requests of a turn of the account, oldest first.
func (s *Service) TurnHelp(ctx context.Context, accountID, turnID string) ([]HelpRequest, error) {
	t, err := s.turns.Get(ctx, accountID, turnID)
	if err != nil {
		return nil, err
	}
	out, err := s.repo.HelpOfTurn(ctx, t.ID)
	if out == nil {
		out = []HelpRequest{}
	}
	return out, err
}
