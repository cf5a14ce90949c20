package entities

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
)

// Every port of the module (docs/architecture.md, "Ports").

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
