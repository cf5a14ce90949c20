package events

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Every port of the module (docs/architecture.md, "Ports").

// Store appends events to the account's event log.
type Store interface {
	Append(ctx context.Context, e platform.Event) error
	// PruneEvents deletes the events that occurred before before, at most
	// limit rows, in one short transaction of its own (not the caller's), and
	// reports how many: the module's retention task (ports.RetentionTask)
	// calls it again while it deletes a full batch.
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
}

// Subscriber reacts to an event inside the transaction that raised it, so
// that what it writes (for example webhook deliveries and their jobs)
// commits or rolls back with the change.
type Subscriber interface {
	OnEvent(ctx context.Context, e platform.Event) error
}
