package stream

import (
	"context"
	"time"
)

// Every port of the module (docs/architecture.md, "Ports").

// Log is the account-scoped event log, read in position order.
type Log interface {
	// Head returns a position such that every event whose place in the
	// order is not final yet, and every event that commits later, comes
	// after it: where a subscriber that wants only new events starts.
	Head(ctx context.Context, accountID string) (Position, error)
	// Locate returns the position of the account's event eventID and when
	// it occurred; ok is false when the log does not hold it (unknown,
	// another account's, or pruned).
	Locate(ctx context.Context, accountID, eventID string) (pos Position, occurredAt time.Time, ok bool, err error)
	// Read returns at most limit events of the account after pos, in
	// position order, holding back those whose place is not final yet;
	// pending reports that such events exist, so the caller reads again
	// shortly even without a notification.
	Read(ctx context.Context, accountID string, after Position, limit int) (entries []Entry, pending bool, err error)
}

// Notifier tells which accounts have new events.
type Notifier interface {
	// Run calls wake with an account id after events of that account
	// commit (spurious calls are harmless), and with "" when notifications
	// may have been lost (for example after the connection that listens
	// for them was re-established), until ctx ends. It returns ctx's error
	// or a failure it cannot recover from.
	Run(ctx context.Context, wake func(accountID string)) error
}
