package entities

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
)

// The ports of this module: every interface it consumes, implemented
// by an adapter (storage, an outbound client) or by another module,
// in one file (docs/architecture.md, "Ports"). A port's capabilities
// are its methods: nothing here is asked for more at run time.

// Repository stores entities. Delete removes the entity and, in the same
// transaction, everything under it (queues, runs, stations, turns, ...).
type Repository interface {
	Create(ctx context.Context, e Entity) error
	Get(ctx context.Context, id string) (Entity, error)
	Update(ctx context.Context, e Entity) error
	Delete(ctx context.Context, id string) error
	// List returns up to page.Limit+1 entities of the account after
	// page.After, ordered by id.
	List(ctx context.Context, accountID string, page platform.PageRequest) ([]Entity, error)
}
