package ticket

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Every port of the module (docs/architecture.md, "Ports").

// Repository stores ticket links.
type Repository interface {
	Create(ctx context.Context, l Link) error
	// GetByHash returns the link whose value hashes to hash (platform
	// NotFound when none).
	GetByHash(ctx context.Context, hash string) (Link, error)
	// CountByTurn counts a turn's links. Called in a unit of work that
	// may then create one, it holds the count until the unit ends (no
	// other link of the turn is made meanwhile), so MaxLinksPerTurn holds
	// under concurrency.
	CountByTurn(ctx context.Context, turnID string) (int, error)

	// CreateHelp stores a new help request unless its turn has an OPEN
	// one; it reports whether it stored this one.
	CreateHelp(ctx context.Context, h HelpRequest) (bool, error)
	GetHelp(ctx context.Context, id string) (HelpRequest, error)
	// GetHelpForUpdate locks the request until the unit of work ends.
	GetHelpForUpdate(ctx context.Context, id string) (HelpRequest, error)
	UpdateHelp(ctx context.Context, h HelpRequest) error
	// CountHelpOfTurn counts a turn's help requests.
	CountHelpOfTurn(ctx context.Context, turnID string) (int, error)
	// HelpOfTurn returns a turn's help requests by id (oldest first).
	HelpOfTurn(ctx context.Context, turnID string) ([]HelpRequest, error)
	// ListHelp returns up to page.Limit+1 help requests of the run after
	// page.After by id, only those of status when it is not empty.
	ListHelp(ctx context.Context, runID, status string, page platform.PageRequest) ([]HelpRequest, error)
	// PruneTicketLinks deletes the links of turns that finished before
	// before; the links of unfinished turns are kept, whatever their age.
	// At most limit rows, in one short transaction of its own (not the
	// caller's), and reports how many: the module's retention task
	// (ports.RetentionTask) calls it again while it deletes a full batch.
	PruneTicketLinks(ctx context.Context, before time.Time, limit int) (int, error)
}

// Turns is what the page needs of the turns module: the turn's view, and
// the customer's own cancel, through the same rules as any cancel.
type Turns interface {
	Get(ctx context.Context, accountID, id string) (turns.View, error)
	List(ctx context.Context, accountID, runID string, f turns.ListFilter, page platform.PageRequest) (platform.Page[turns.View], error)
	CancelFor(ctx context.Context, accountID, id, reason string) (turns.View, error)
}

// Places reads the public names of the turn's queue and branch.
type Places interface {
	GetQueue(ctx context.Context, accountID, id string) (queues.Queue, error)
	GetRun(ctx context.Context, accountID, id string) (queues.Run, error)
}

// Branches reads the branch (entity) of the queue.
type Branches interface {
	Get(ctx context.Context, accountID, id string) (entities.Entity, error)
}
