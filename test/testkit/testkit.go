// Package testkit holds the helpers the core and contract tests share: a
// job scheduler that records the jobs of committed units of work, the
// fields of a VALIDATION_ERROR, and a builder of the rows other resources
// hang from (account -> entity -> queue -> run -> turn, in owners.go).
package testkit

import (
	"context"
	"sync"
	"testing"

	"github.com/qms-dev/qms/core/platform"
)

// AfterCommitter registers a function to run once the caller's unit of work
// commits (memory.Store, postgres.DB).
type AfterCommitter interface {
	AfterCommit(ctx context.Context, f func())
}

// Jobs is a platform.JobScheduler that records the jobs of committed units
// of work and runs none: tests run them by hand, when and as often as they
// want, which keeps the domain tests free of timers.
type Jobs struct {
	uow  AfterCommitter
	mu   sync.Mutex
	jobs []platform.Job
}

// NewJobs records the jobs of uow's committed units of work.
func NewJobs(uow AfterCommitter) *Jobs { return &Jobs{uow: uow} }

// Schedule implements platform.JobScheduler.
func (j *Jobs) Schedule(ctx context.Context, job platform.Job) error {
	j.uow.AfterCommit(ctx, func() {
		j.mu.Lock()
		j.jobs = append(j.jobs, job)
		j.mu.Unlock()
	})
	return nil
}

// ScheduleMany implements platform.JobScheduler: Schedule of each.
func (j *Jobs) ScheduleMany(ctx context.Context, jobs []platform.Job) error {
	for _, job := range jobs {
		if err := j.Schedule(ctx, job); err != nil {
			return err
		}
	}
	return nil
}

// All returns the jobs scheduled so far.
func (j *Jobs) All() []platform.Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]platform.Job(nil), j.jobs...)
}

// Take returns and forgets the jobs scheduled so far.
func (j *Jobs) Take() []platform.Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.jobs
	j.jobs = nil
	return out
}

// OfKind returns the jobs of kind scheduled so far.
func (j *Jobs) OfKind(kind string) []platform.Job {
	var out []platform.Job
	for _, job := range j.All() {
		if job.Kind == kind {
			out = append(out, job)
		}
	}
	return out
}

// Fields returns the paths and rules of a VALIDATION_ERROR; any other
// error fails the test.
func Fields(t testing.TB, err error) map[string]string {
	t.Helper()
	if !platform.IsCode(err, platform.CodeValidation) {
		t.Fatalf("want VALIDATION_ERROR, got %v", err)
	}
	return platform.FieldRules(err)
}
