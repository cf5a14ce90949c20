package display

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// Every port of the module (docs/architecture.md, "Ports").

// Repository stores display tokens.
type Repository interface {
	Create(ctx context.Context, t Token) error
	// Get returns a token by id (platform NotFound when none).
	Get(ctx context.Context, id string) (Token, error)
	// GetByHash returns the token whose value hashes to hash (platform
	// NotFound when none).
	GetByHash(ctx context.Context, hash string) (Token, error)
	// Update stores every field of a token.
	Update(ctx context.Context, t Token) error
	// ListByRun returns up to page.Limit+1 tokens of the run after
	// page.After, ordered by id.
	ListByRun(ctx context.Context, runID string, page platform.PageRequest) ([]Token, error)
	// CountLive counts the run's unrevoked tokens, and holds the count
	// until the unit of work ends (no other token of the run is made
	// meanwhile), so MaxTokensPerRun holds under concurrency.
	CountLive(ctx context.Context, runID string) (int, error)
}

// Queues is what the board needs of the queues module.
type Queues interface {
	GetQueue(ctx context.Context, accountID, id string) (queues.Queue, error)
	GetRun(ctx context.Context, accountID, id string) (queues.Run, error)
	ListStations(ctx context.Context, accountID, queueID string) ([]queues.Station, error)
}

// Turns is what the board needs of the turns module.
type Turns interface {
	List(ctx context.Context, accountID, runID string, f turns.ListFilter, page platform.PageRequest) (platform.Page[turns.View], error)
}

// Calls reads past calls from the event log.
type Calls interface {
	// RecentCalls returns the run's last turn.called events, newest first,
	// at most limit.
	RecentCalls(ctx context.Context, accountID, runID string, limit int) ([]platform.Event, error)
}

// Joining counts the checked-in appointments of a HYBRID run waiting to
// join its line (their time came while the run was closed): people in the
// room the board counts as waiting. The appointments repository provides
// it.
type Joining interface {
	CountJoining(ctx context.Context, runID string, now time.Time) (int, error)
}
