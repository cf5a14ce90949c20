package join

import (
	"context"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
)

// Every port of the module (docs/architecture.md, "Ports").

// Repository stores join links.
type Repository interface {
	Create(ctx context.Context, l Link) error
	// Get returns a link by id (platform NotFound when none).
	Get(ctx context.Context, id string) (Link, error)
	// GetByHash returns the link whose value hashes to hash (platform
	// NotFound when none).
	GetByHash(ctx context.Context, hash string) (Link, error)
	// Update stores every field of a link.
	Update(ctx context.Context, l Link) error
	// ListByQueue returns up to page.Limit+1 links of the queue after
	// page.After, ordered by id.
	ListByQueue(ctx context.Context, queueID string, page platform.PageRequest) ([]Link, error)
	// CountLive counts the queue's unrevoked links, and holds the count
	// until the unit of work ends (no other link of the queue is made
	// meanwhile), so MaxLinksPerQueue holds under concurrency.
	CountLive(ctx context.Context, queueID string) (int, error)
}

// Queues reads the queue with its runs (newest first).
type Queues interface {
	Get(ctx context.Context, accountID, id string) (queues.QueueView, error)
}

// Branches reads the queue's branch.
type Branches interface {
	Get(ctx context.Context, accountID, id string) (entities.Entity, error)
}

// Turns is what joining needs of the turns module: the API's own create
// (every intake rule, the guards, idempotency), a turn's view, the line,
// and the API's own arrive.
type Turns interface {
	Create(ctx context.Context, accountID, runID string, in turns.CreateInput) (turns.View, bool, error)
	Get(ctx context.Context, accountID, id string) (turns.View, error)
	List(ctx context.Context, accountID, runID string, f turns.ListFilter, page platform.PageRequest) (platform.Page[turns.View], error)
	Arrive(ctx context.Context, accountID, id string) (turns.View, error)
}

// Tickets makes and reads ticket links.
type Tickets interface {
	Create(ctx context.Context, accountID, turnID string, in ticket.CreateInput) (ticket.Created, error)
	Resolve(ctx context.Context, value string) (ticket.Link, turns.View, error)
}

// Phones checks typed phone numbers (an adapter: the numbering plans are
// the library's data).
type Phones interface {
	// Normalize returns raw in E.164, read in region when it has no "+";
	// an error says it is not a real number.
	Normalize(raw, region string) (string, error)
	// ValidRegion reports whether region is a known country code.
	ValidRegion(region string) bool
	// RegionOfNumber is the country of a "+" number ("" when none).
	RegionOfNumber(raw string) string
	// RegionForZone guesses a time zone's country ("" when not one).
	RegionForZone(zone string) string
}
