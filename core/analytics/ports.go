package analytics

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Every port of the module (docs/architecture.md, "Ports").

// Repository computes the aggregates. Implementations must aggregate in
// the storage (never load every turn): analytics run over all of an
// account's history.
type Repository interface {
	// Live returns, per queue, the turns active now and the current waits
	// at now, and the figures of today's window: Served, NoShows and
	// Service are the ones used.
	Live(ctx context.Context, today []Window, now time.Time) (map[string]Live, map[string]Stats, error)
	// Summary returns the figures of each queue's window, and of all of
	// them together (the total's percentiles are over every turn, not an
	// average of the queues').
	Summary(ctx context.Context, windows []Window) (map[string]Stats, Stats, error)
}

// Queues is what analytics needs of the queues module's storage.
type Queues interface {
	// ListQueues returns up to page.Limit+1 queues of the account after
	// page.After, by id.
	ListQueues(ctx context.Context, accountID, entityID string, page platform.PageRequest) ([]queues.Queue, error)
}
