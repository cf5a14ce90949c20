package platform

import (
	"context"
	"time"
)

// Every port of the module (docs/architecture.md, "Ports").

// Clock tells the time. Every rule that depends on time reads it from here,
// so tests can move it.
type Clock interface {
	Now() time.Time
}

// EventSink records domain events. Emit must be called with a context inside
// a UnitOfWork: the event commits or rolls back with the change that raised
// it.
type EventSink interface {
	Emit(ctx context.Context, e Event) error
}

// JobScheduler schedules jobs. Called inside a UnitOfWork, the job commits
// or rolls back with the change that scheduled it.
type JobScheduler interface {
	Schedule(ctx context.Context, job Job) error
	// ScheduleMany schedules several jobs in one go (one insert for an
	// event's fan-out to its webhook endpoints): all of them or, on an
	// error, none.
	ScheduleMany(ctx context.Context, jobs []Job) error
}

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
