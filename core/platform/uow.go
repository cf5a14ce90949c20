package platform

import "context"

// UnitOfWork runs one use case's writes in one transaction. The transaction
// travels in the context handed to fn: repositories, the event sink and the
// job scheduler called with that context take part in it. fn's error rolls
// everything back, events and jobs included; a nil error commits them all.
// A nested Do joins the outer transaction.
type UnitOfWork interface {
	Do(ctx context.Context, fn func(ctx context.Context) error) error
	// AfterCommit runs f once the unit of work of ctx has committed (at
	// once outside one); never when it rolls back. f must not fail: it
	// fills caches, wakes waiters.
	AfterCommit(ctx context.Context, f func())
}
