package riverjobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestFetchedButNeverReceivedJobIsRequeued leaves in river_job what a
// fetch whose answer was lost leaves (state running, attempt 1, attempted
// by this process's River client, which works no such job), and checks
// that the process runs it again within seconds, not after River's rescue
// delay; while a job this process does work past OrphanAfter runs once,
// and one attempted by another process is left to River's rescuer.
func TestFetchedButNeverReceivedJobIsRequeued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	lost := make(chan ports.JobContext, 10)
	foreign := make(chan ports.JobContext, 10)
	var busyRuns atomic.Int32
	busyDone := make(chan struct{})
	r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger, OrphanCheckInterval: 200 * time.Millisecond, OrphanAfter: time.Second})
	noBackoff := func(int) time.Duration { return 0 }
	r.Register(ports.JobKind{Name: "lost", Handler: attempts(lost), Backoff: noBackoff})
	r.Register(ports.JobKind{Name: "foreign", Handler: attempts(foreign), Backoff: noBackoff})
	r.Register(ports.JobKind{Name: "busy", Backoff: noBackoff, Handler: func(context.Context, ports.JobContext) error {
		if busyRuns.Add(1) == 1 {
			defer close(busyDone)
		}
		time.Sleep(3 * time.Second) // three times OrphanAfter
		return nil
	}})
	client, err := r.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"lost", "foreign"} {
		if err := r.Schedule(ctx, platform.Job{Kind: kind, Args: struct{}{}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1,
		attempted_at = now() - interval '5 seconds',
		attempted_by = CASE kind WHEN 'lost' THEN ARRAY[$1] ELSE ARRAY['another-process'] END`, client.ID()); err != nil {
		t.Fatal(err)
	}
	startRunner(t, r)
	if err := r.Schedule(ctx, platform.Job{Kind: "busy", Args: struct{}{}}); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	if job := waitAttempt(t, lost, 5*time.Second); job.Attempt != 2 {
		t.Fatalf("re-run as attempt %d, want 2", job.Attempt)
	}
	t.Logf("the lost job ran again %v after the process started", time.Since(began).Round(10*time.Millisecond))
	if n := r.Orphans(); n != 1 {
		t.Fatalf("Orphans() = %d, want 1", n)
	}
	select {
	case <-busyDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the busy job did not finish")
	}
	time.Sleep(time.Second) // a few more passes after it finished
	if n := busyRuns.Load(); n != 1 {
		t.Fatalf("the job worked past OrphanAfter ran %d times", n)
	}
	select {
	case job := <-foreign:
		t.Fatalf("another process's running job was taken (attempt %d)", job.Attempt)
	default:
	}
	var errs int
	if err := db.Pool.QueryRow(ctx, `SELECT coalesce(array_length(errors, 1), 0) FROM river_job WHERE kind = 'lost'`).Scan(&errs); err != nil {
		t.Fatal(err)
	}
	if errs != 1 {
		t.Fatalf("the lost job records %d errors, want the requeue's one", errs)
	}
}
