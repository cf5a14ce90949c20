package workflow

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Every port of the module (docs/architecture.md, "Ports").

// ForwardRepository stores forwards.
type ForwardRepository interface {
	// CreateForward stores a new forward unless one exists for its (turn,
	// link); it reports whether it stored this one.
	CreateForward(ctx context.Context, f Forward) (bool, error)
	GetForward(ctx context.Context, id string) (Forward, error)
	// GetForwardForUpdate locks the forward until the unit of work ends.
	GetForwardForUpdate(ctx context.Context, id string) (Forward, error)
	// ForwardOfForUpdate locks and returns the forward of (turn, link).
	ForwardOfForUpdate(ctx context.Context, turnID, linkID string) (Forward, error)
	UpdateForward(ctx context.Context, f Forward) error
	// ForwardsOfLink returns up to page.Limit+1 forwards of the link after
	// page.After, by id.
	ForwardsOfLink(ctx context.Context, linkID string, page platform.PageRequest) ([]Forward, error)
	// ForwardsOfTurn returns the forwards of a source turn, by id.
	ForwardsOfTurn(ctx context.Context, turnID string) ([]Forward, error)
	// PruneForwards deletes the finished forwards (FORWARDED or FAILED)
	// last updated before before; pending ones are kept. At most limit
	// rows, in one short transaction of its own (not the caller's), and
	// reports how many: the module's retention task (ports.RetentionTask)
	// calls it again while it deletes a full batch.
	PruneForwards(ctx context.Context, before time.Time, limit int) (int, error)
}

// Turns is what forwarding needs of the turns module.
type Turns interface {
	Turn(ctx context.Context, accountID, id string) (turns.Turn, error)
	Admit(ctx context.Context, accountID, runID string, a turns.Admission) (turns.Turn, error)
	// Get is a turn's full view; CancelFor cancels a turn for a reason
	// (a transfer's source turn), in the caller's unit of work.
	Get(ctx context.Context, accountID, id string) (turns.View, error)
	CancelFor(ctx context.Context, accountID, id, reason string) (turns.View, error)
}

// QueueStore is what forwarding reads of queues and runs; the
// queues.Repository implementations provide it.
type QueueStore interface {
	GetQueue(ctx context.Context, id string) (queues.Queue, error)
	ListRuns(ctx context.Context, queueID string, limit int) ([]queues.Run, error)
	// GetRunForUpdate locks a run (a transfer locks its two runs in id
	// order before anything else).
	GetRunForUpdate(ctx context.Context, id string) (queues.Run, error)
}

// Repository stores links.
type Repository interface {
	CreateLink(ctx context.Context, l Link) error
	GetLink(ctx context.Context, id string) (Link, error)
	UpdateLink(ctx context.Context, l Link) error
	DeleteLink(ctx context.Context, id string) error
	// ListLinks returns up to page.Limit+1 links of the account after
	// page.After, ordered by id.
	ListLinks(ctx context.Context, accountID string, page platform.PageRequest) ([]Link, error)
	// LinksFrom returns every link whose source is the queue, oldest first.
	LinksFrom(ctx context.Context, queueID string) ([]Link, error)
}

// Queues is what this module needs of the queues module.
type Queues interface {
	GetQueue(ctx context.Context, accountID, id string) (queues.Queue, error)
}
