package queues

import (
	"context"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
)

// Every port of the module (docs/architecture.md, "Ports").

// Repository stores queues, stations and runs. The ForUpdate reads lock the
// row until the unit of work ends, so concurrent use cases on one queue or
// run serialise.
type Repository interface {
	CreateQueue(ctx context.Context, q Queue) error
	GetQueue(ctx context.Context, id string) (Queue, error)
	GetQueueForUpdate(ctx context.Context, id string) (Queue, error)
	UpdateQueue(ctx context.Context, q Queue) error
	// ListQueues returns up to page.Limit+1 queues of the account after
	// page.After ordered by id, only those of entityID when it is not empty.
	ListQueues(ctx context.Context, accountID, entityID string, page platform.PageRequest) ([]Queue, error)

	CreateStation(ctx context.Context, s Station) error
	GetStation(ctx context.Context, id string) (Station, error)
	DeleteStation(ctx context.Context, id string) error
	// ListStations returns a queue's stations, oldest first.
	ListStations(ctx context.Context, queueID string) ([]Station, error)

	CreateRun(ctx context.Context, r Run) error
	GetRun(ctx context.Context, id string) (Run, error)
	GetRunForUpdate(ctx context.Context, id string) (Run, error)
	UpdateRun(ctx context.Context, r Run) error
	// ListRuns returns a queue's newest runs first, at most limit.
	ListRuns(ctx context.Context, queueID string, limit int) ([]Run, error)
}

// Entities is what this module needs of the entities module.
type Entities interface {
	Get(ctx context.Context, accountID, id string) (entities.Entity, error)
}
