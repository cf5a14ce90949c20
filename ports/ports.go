// Package ports declares the contracts between the application and its
// driven adapters that are not owned by a single domain module: storage
// health, job workers, rate limiting. Each core module declares its own
// repository port next to the use cases that consume it (core/<module>);
// the shared domain ports (unit of work, clock, events, job scheduling) live
// in core/platform so the cores can use them without leaving core/.
//
// An adapter set (memory, postgres) implements all of them; bootstrap picks
// one set from config.
package ports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Pinger reports whether storage is reachable and takes writes (GET
// /readyz).
type Pinger interface {
	Ping(ctx context.Context) error
}

// ErrReadOnly is wrapped by a Pinger's error when storage answers but
// cannot take writes (a standby, a read-only database): the process is not
// ready, though it reaches its storage.
var ErrReadOnly = errors.New("storage is read-only")

// FaultClassifier tells the errors of storage that cannot be reached for
// now (refused or broken connections, a server shutting down or starting
// up, a pool with no connection to give within its wait) from the rest: the
// HTTP layer answers them 503 SERVICE_UNAVAILABLE with Retry-After, never
// 500, so clients retry.
type FaultClassifier interface {
	Unavailable(err error) bool
}

// JobHandler runs one job. Returning an error makes the job retry with
// backoff until its attempts are exhausted; a handler must be idempotent.
type JobHandler func(ctx context.Context, job JobContext) error

// JobContext is what a handler learns about the job it runs.
type JobContext struct {
	ID      string
	Kind    string
	Args    json.RawMessage
	Attempt int // 1-based
	// MaxAttempts is the attempt after which the job is discarded.
	MaxAttempts int
}

// JobKind describes a kind of job and how it is retried.
type JobKind struct {
	Name        string
	Handler     JobHandler
	MaxAttempts int
	// Timeout bounds one attempt; 0 means the runner's default.
	Timeout time.Duration
	// Backoff returns the delay before attempt+1 after a failed attempt;
	// nil uses the runner's default exponential backoff with jitter.
	Backoff func(attempt int) time.Duration
	// Every, when positive, makes the kind periodic: the runner enqueues a
	// job of it (with no args) at start-up and then every Every, and skips
	// a period while the last one is still pending. On River only the
	// elected leader enqueues (River's periodic jobs), so several processes
	// run it once per period between them.
	Every time.Duration
	// Queue, when set, runs the kind's jobs apart from the others, with
	// workers of their own (on River, a queue of that name sized by the
	// runner's options), so a burst of one kind does not hold up the rest
	// and the others do not delay it. The memory runner has one pool.
	Queue string
}

// JobRunner runs scheduled jobs. It implements the core's JobScheduler, so
// jobs are scheduled inside the use case's transaction, and runs them
// through the handlers registered before Start.
type JobRunner interface {
	platform.JobScheduler
	Register(kind JobKind)
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// RateDecision is the outcome of one rate-limit check.
type RateDecision struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is when the oldest request counted leaves the minute: the next
	// instant Remaining grows, and when a refused request may retry.
	Reset time.Time
}

// RateLimiter lets at most limit requests of a key through in any minute
// (a sliding window: no 60 s holds more, whatever its start). The postgres
// implementation counts in the database, so several processes share one
// budget per key (each leasing slices of it, good for one second, so
// Remaining may be low by what other processes hold unused; never over).
type RateLimiter interface {
	Allow(ctx context.Context, key string, limit int, now time.Time) (RateDecision, error)
	// PruneRateLimits deletes the windows of keys idle since before, at most
	// limit rows, in one short transaction of its own (not the caller's), and
	// reports how many: the module's retention task (ports.RetentionTask)
	// calls it again while it deletes a full batch.
	PruneRateLimits(ctx context.Context, before time.Time, limit int) (int, error)
}

// RateWindowSeconds is how many whole seconds after its own a request
// counts against its key's budget: a request of second S counts until
// S+61, between 60 and 61 s, so no 60 s window ever holds more than the
// limit (the limiters count in one-second buckets).
const RateWindowSeconds = 60

// RateDecisionOf is the decision both limiters return: count requests in
// the live buckets, the oldest of second oldest (nil for none), at second
// now.
func RateDecisionOf(allowed bool, limit, count int, oldest *int64, now int64) RateDecision {
	first := now
	if oldest != nil {
		first = *oldest
	}
	return RateDecision{Allowed: allowed, Limit: limit, Remaining: max(limit-count, 0),
		Reset: time.Unix(first+RateWindowSeconds+1, 0).UTC()}
}

// Typed is the handler of a kind whose arguments are A: the kind decodes
// them once, so a handler never reads JSON (River's JobArgs idea). A job
// whose arguments do not decode, or that Check refuses, fails with its id
// and arguments in the error.
func Typed[A any](module string, handle func(ctx context.Context, args A, job JobContext) error, check ...func(A) error) JobHandler {
	return func(ctx context.Context, job JobContext) error {
		var args A
		if err := json.Unmarshal(job.Args, &args); err != nil {
			return fmt.Errorf("%s: job %s (%s): malformed arguments %s: %w", module, job.ID, job.Kind, job.Args, err)
		}
		for _, c := range check {
			if err := c(args); err != nil {
				return fmt.Errorf("%s: job %s (%s): malformed arguments %s: %w", module, job.ID, job.Kind, job.Args, err)
			}
		}
		return handle(ctx, args, job)
	}
}
