package riverjobs_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
	"github.com/qms-dev/qms/test/pgtest"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// attempts is a handler that reports each attempt it sees.
func attempts(ch chan<- ports.JobContext) ports.JobHandler {
	return func(_ context.Context, job ports.JobContext) error {
		ch <- job
		return nil
	}
}

func startRunner(t *testing.T, r *riverjobs.Runner) {
	t.Helper()
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Stop(ctx)
	})
}

func waitAttempt(t *testing.T, ch <-chan ports.JobContext, within time.Duration) ports.JobContext {
	t.Helper()
	select {
	case job := <-ch:
		return job
	case <-time.After(within):
		t.Fatalf("the stuck job was not re-run within %s", within)
		return ports.JobContext{}
	}
}

// TestStuckJobIsRescuedWithDefaults leaves in river_job exactly what a
// worker killed two minutes into a job leaves (state running, attempt 1,
// attempted by a client that is gone) and checks that a runner with the
// production defaults re-runs it. The elected leader's rescuer runs at
// once and every 30 s; it makes running jobs older than
// RescueStuckJobsAfter (20 s) and past their kind's timeout retryable, and
// River's scheduler makes them available again.
func TestStuckJobIsRescuedWithDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	ran := make(chan ports.JobContext, 10)
	r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger})
	r.Register(ports.JobKind{Name: "stuck", Handler: attempts(ran), Backoff: func(int) time.Duration { return 0 }})
	if err := r.Schedule(ctx, platform.Job{Kind: "stuck", Args: struct{}{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1,
		attempted_at = now() - interval '2 minutes', attempted_by = ARRAY['killed-process']`); err != nil {
		t.Fatal(err)
	}
	startRunner(t, r)
	if job := waitAttempt(t, ran, 30*time.Second); job.Attempt != 2 {
		t.Fatalf("re-run as attempt %d, want 2", job.Attempt)
	}
}

// helperEnv, when set, makes TestKilledWorkerHelper the worker process of
// TestKilledWorkerIsRescued, on the database it names.
const helperEnv = "QMS_RIVER_KILLED_WORKER_URL"

// TestKilledWorkerHelper is not a test: TestKilledWorkerIsRescued runs the
// test binary again with helperEnv set, and this process takes a job and
// hangs in it until it is killed.
func TestKilledWorkerHelper(t *testing.T) {
	url := os.Getenv(helperEnv)
	if url == "" {
		t.Skip("helper process of TestKilledWorkerIsRescued")
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger})
	r.Register(ports.JobKind{Name: "killed", Handler: func(ctx context.Context, _ ports.JobContext) error {
		<-ctx.Done()
		return ctx.Err()
	}})
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Schedule(ctx, platform.Job{Kind: "killed", Args: struct{}{}}); err != nil {
		t.Fatal(err)
	}
	// The parent kills this process; the sleep only bounds an orphan.
	time.Sleep(2 * time.Minute)
}

// TestKilledWorkerIsRescued kills (SIGKILL) a process in the middle of a
// job and checks that another process re-runs the job. The survivor waits
// for the dead leader's lease to lapse (about 15 s), becomes leader, and
// its rescuer picks the job up; RescueStuckJobsAfter is cut to 2 s here so
// the test does not wait the production minute (see
// TestStuckJobIsRescuedWithDefaults for that). It takes about 20 s.
func TestKilledWorkerIsRescued(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 20 s")
	}
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	// This process watches the job through, and later runs, its own handle.
	watch, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watch.Close)

	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWorkerHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+url)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		var running int
		if err := watch.Pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'killed' AND state = 'running'").Scan(&running); err == nil && running == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper never ran the job; its output:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true

	ran := make(chan ports.JobContext, 10)
	r := riverjobs.New(watch, riverjobs.Options{
		Logger:               quietLogger,
		JobTimeout:           time.Second,
		RescueStuckJobsAfter: 2 * time.Second,
	})
	r.Register(ports.JobKind{Name: "killed", Handler: attempts(ran), Backoff: func(int) time.Duration { return 0 }})
	began := time.Now()
	startRunner(t, r)
	job := waitAttempt(t, ran, 60*time.Second)
	if job.Attempt != 2 {
		t.Fatalf("re-run as attempt %d, want 2", job.Attempt)
	}
	t.Logf("re-run %s after the kill", time.Since(began).Round(time.Second))
}
