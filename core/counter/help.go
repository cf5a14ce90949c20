package counter

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// The console's side of the queue's help (docs/queues.md, "help"): the
// customers who pressed "I need help" on their ticket page are listed on
// the desk of every console of the queue, live, and the clerk answers one
// with one of the queue's quickReplies, which the customer's ticket page
// shows at once.

// HelpRequest is a customer's request for help as the console shows it,
// the help API's shape (GET /help-requests/{id}): the turn's code and
// since when it asks, never more of the customer.
type HelpRequest struct {
	ID          string     `json:"id"`
	TurnID      string     `json:"turnId"`
	QueueID     string     `json:"queueId"`
	RunID       string     `json:"queueRunId"`
	DisplayCode string     `json:"displayCode"`
	Status      string     `json:"status"`
	Reply       *string    `json:"reply"`
	RequestedAt time.Time  `json:"requestedAt"`
	AnsweredAt  *time.Time `json:"answeredAt"`
}

// HelpAnswerInput is the body of POST /counter/{token}/help-requests/{id}/answer.
type HelpAnswerInput struct {
	Reply *string `json:"reply"`
}

// openHelp is the run's open help requests, the one waiting longest
// first. A request outlives its turn (the customer may be served before
// anyone answers): it stays listed until a clerk answers it, so a request
// is never dropped without someone having seen it.
func (s *Service) openHelp(ctx context.Context, accountID, runID string) ([]HelpRequest, error) {
	hs, err := s.help.OpenHelp(ctx, accountID, runID)
	if err != nil {
		return nil, err
	}
	if hs == nil {
		hs = []HelpRequest{}
	}
	return hs, nil
}

// AnswerHelp answers an open help request of the link's queue with one of
// the queue's quickReplies (the ticket module's rules: 422
// NOT_A_QUICK_REPLY naming reply, 409 HELP_ALREADY_ANSWERED for another
// reply, the same reply again returns the request as it is). A request of
// another queue is 404, as another queue's turn is: the link acts on its
// queue and says nothing of the others.
func (s *Service) AnswerHelp(ctx context.Context, l Link, id string, in HelpAnswerInput) (HelpRequest, error) {
	h, err := s.help.GetHelp(ctx, l.AccountID, id)
	if err != nil || h.QueueID != l.QueueID {
		if err == nil || platform.IsCode(err, platform.CodeNotFound) || platform.IsCode(err, platform.CodeForbidden) {
			return HelpRequest{}, platform.NotFound("help request", id)
		}
		return HelpRequest{}, err
	}
	return s.help.AnswerHelp(ctx, l.AccountID, h.ID, in.Reply)
}
