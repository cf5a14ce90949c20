package platform

import (
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
