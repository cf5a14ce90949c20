package platform

import (
	"context"
	"time"
)

// Job is background work to run later, at least once: a webhook delivery, a
// link forwarding, a tolerance expiry. Args must marshal to JSON. Workers
// must be idempotent, since a job can run more than once.
type Job struct {
	Kind  string
	Args  any
	RunAt time.Time // zero: as soon as possible
	// UniqueKey, when set, keeps at most one pending job per key and kind:
	// while one is scheduled, available, running or waiting to retry, a
	// second Schedule with the same kind and key does nothing. Once the
	// first finishes, a new one may follow.
	UniqueKey string
	// MaxAttempts overrides the default number of attempts when > 0.
	MaxAttempts int
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
