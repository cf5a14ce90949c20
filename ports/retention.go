package ports

import (
	"context"
	"time"
)

// Pruner deletes the records that would otherwise grow without bound. Each
// method deletes at most limit rows older than before, in one short
// statement (its own transaction), and reports how many it deleted: the
// retention job calls it again while it deletes a full batch, so a large
// backlog never holds a long lock or a long transaction. Nothing at or
// after before is touched, nor anything still in use whatever its age.
type Pruner interface {
	// PruneEvents deletes events of the log that occurred before before.
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneDeliveries deletes finished webhook deliveries (SUCCEEDED or
	// FAILED) created before before; pending ones are kept.
	PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneLineChanges deletes the line changes of runs closed before
	// before; the changes of open runs are kept (they are pruned per run as
	// the line moves).
	PruneLineChanges(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneForwards deletes finished forward records (FORWARDED or FAILED)
	// last updated before before; pending ones are kept.
	PruneForwards(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneRateLimits deletes rate-limit windows that started before
	// before.
	PruneRateLimits(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneTicketLinks deletes the ticket links of turns that finished
	// before before; the links of unfinished turns are kept, whatever
	// their age.
	PruneTicketLinks(ctx context.Context, before time.Time, limit int) (int, error)
}
