package accesscodes

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Every port of the module (docs/architecture.md, "Ports").

// TurnCodes stores which turn took which code.
type TurnCodes interface {
	Record(ctx context.Context, tc TurnCode) error
	// ForTurn returns the code a turn was taken with (NotFound if none).
	ForTurn(ctx context.Context, turnID string) (TurnCode, error)
	// ActiveTurn returns the id of a turn of the queue taken with the code
	// that is still pending (WAITLISTED, WAITING, HELD, CALLED or
	// IN_SERVICE), if there is one.
	ActiveTurn(ctx context.Context, accessCodeID, queueID string) (string, bool, error)
}

// Repository stores access codes. The code is unique per account: Create
// and CreateMany refuse a duplicate with a CodeDuplicate error, also when a
// concurrent transaction inserted it first.
type Repository interface {
	Create(ctx context.Context, c AccessCode) error
	// CreateMany inserts every code or none.
	CreateMany(ctx context.Context, cs []AccessCode) error
	Get(ctx context.Context, id string) (AccessCode, error)
	// GetByCode finds the account's code by its value (NotFound if none).
	GetByCode(ctx context.Context, accountID, code string) (AccessCode, error)
	// Existing returns those of codes that already exist in the account.
	Existing(ctx context.Context, accountID string, codes []string) ([]string, error)
	Update(ctx context.Context, c AccessCode) error
	// List returns up to page.Limit+1 codes of the account after
	// page.After, ordered by id.
	List(ctx context.Context, accountID string, page platform.PageRequest) ([]AccessCode, error)
	// TakeUse counts one use of the code, atomically with the check that
	// allows it: the code is enabled, not expired at now and under maxUses
	// at the moment of the write. It returns the updated code and true, or
	// false (and no change) when the check failed. Concurrent takers of a
	// code's last use: exactly one gets true.
	TakeUse(ctx context.Context, id string, now time.Time) (AccessCode, bool, error)
	// Lock locks the code's row until the unit of work ends, as TakeUse
	// does: a turn coming back with the code and an intake taking it happen
	// one after the other.
	Lock(ctx context.Context, id string) error
}

// Entities is what this module needs of the entities module.
type Entities interface {
	Get(ctx context.Context, accountID, id string) (entities.Entity, error)
}

// Queues is what this module needs of the queues module.
type Queues interface {
	GetQueue(ctx context.Context, accountID, id string) (queues.Queue, error)
}
