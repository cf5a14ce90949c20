package counter

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
)

// Every port of the module (docs/architecture.md, "Ports").

// Repository stores counter links and their presses.
type Repository interface {
	CreateLink(ctx context.Context, l Link) error
	// GetLink returns a link by id (platform NotFound when none).
	GetLink(ctx context.Context, id string) (Link, error)
	// GetLinkByHash returns the link whose value hashes to hash (platform
	// NotFound when none).
	GetLinkByHash(ctx context.Context, hash string) (Link, error)
	// UpdateLink stores every field of a link.
	UpdateLink(ctx context.Context, l Link) error
	// ListLinks returns up to page.Limit+1 links of the queue after
	// page.After, ordered by id.
	ListLinks(ctx context.Context, queueID string, page platform.PageRequest) ([]Link, error)
	// CountLiveLinks counts the queue's unrevoked links, and holds the
	// count until the unit of work ends (no other link of the queue is
	// made meanwhile), so MaxLinksPerQueue holds under concurrency.
	CountLiveLinks(ctx context.Context, queueID string) (int, error)
	// ClaimPress stores p unless its link already has a press with p's
	// key; then it returns that press and claimed false. Two claims of
	// one key at once: one stores, the other waits for it to commit (or
	// roll back) and then answers as if it came second (or claims).
	ClaimPress(ctx context.Context, p Press) (existing Press, claimed bool, err error)
	// SetPressTurn records the turn a claimed press acted on.
	SetPressTurn(ctx context.Context, pressID, turnID string) error
	// PressesOfTurn returns the turn's presses, oldest first.
	PressesOfTurn(ctx context.Context, turnID string) ([]Press, error)
}

// Queues is what the console needs of the queues module.
type Queues interface {
	Get(ctx context.Context, accountID, id string) (queues.QueueView, error)
	GetQueue(ctx context.Context, accountID, id string) (queues.Queue, error)
}

// Turns is what the console needs of the turns module: its reads and
// every dispatch operation, each applying the queue's own rules.
type Turns interface {
	Turn(ctx context.Context, accountID, id string) (turns.Turn, error)
	Get(ctx context.Context, accountID, id string) (turns.View, error)
	List(ctx context.Context, accountID, runID string, f turns.ListFilter, page platform.PageRequest) (platform.Page[turns.View], error)
	Create(ctx context.Context, accountID, runID string, in turns.CreateInput) (turns.View, bool, error)
	Next(ctx context.Context, accountID, runID string, in turns.CallInput) (turns.View, error)
	Call(ctx context.Context, accountID, id string, in turns.CallInput) (turns.View, error)
	Arrive(ctx context.Context, accountID, id string) (turns.View, error)
	Start(ctx context.Context, accountID, id string) (turns.View, error)
	Complete(ctx context.Context, accountID, id string) (turns.View, error)
	NoShow(ctx context.Context, accountID, id string) (turns.View, error)
	Hold(ctx context.Context, accountID, id string) (turns.View, error)
	Release(ctx context.Context, accountID, id string) (turns.View, error)
	CancelFor(ctx context.Context, accountID, id, reason string) (turns.View, error)
	Reopen(ctx context.Context, accountID, id string) (turns.View, error)
	SetPriority(ctx context.Context, accountID, id string, in turns.PriorityInput) (turns.View, error)
}

// Links is what the console needs of the workflow module: the queue's
// connected-queue links, and forwarding through one.
type Links interface {
	List(ctx context.Context, accountID string, page platform.PageRequest) (platform.Page[workflow.Link], error)
	ForwardNow(ctx context.Context, accountID, turnID string, in workflow.ForwardInput) (workflow.Forward, error)
}

// Help is what the console needs of the ticket module's help requests,
// each read and write scoped to the account.
type Help interface {
	// OpenHelp returns the run's OPEN help requests, oldest first.
	OpenHelp(ctx context.Context, accountID, runID string) ([]HelpRequest, error)
	// GetHelp returns a help request of the account.
	GetHelp(ctx context.Context, accountID, id string) (HelpRequest, error)
	// AnswerHelp answers a help request with reply, which must be one of
	// its queue's help.quickReplies.
	AnswerHelp(ctx context.Context, accountID, id string, reply *string) (HelpRequest, error)
}
