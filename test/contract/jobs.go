package contract

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

// Time limits of the suite. River picks up a job within about a second; a
// retry or a near RunAt takes one fetch poll more.
const (
	jobWait = 15 * time.Second
	// quiet is how long a job that must not run is given to show up.
	quiet = 700 * time.Millisecond
)

// fastRetry keeps retries in tests well under River's fetch poll.
func fastRetry(int) time.Duration { return 10 * time.Millisecond }

// run is one call of a handler.
type run struct {
	job ports.JobContext
	at  time.Time
}

// recorder is a handler that records its calls; act, when set, decides the
// outcome.
type recorder struct {
	mu   sync.Mutex
	runs []run
	ch   chan run
	act  func(ctx context.Context, job ports.JobContext) error
}

func newRecorder(act func(ctx context.Context, job ports.JobContext) error) *recorder {
	return &recorder{ch: make(chan run, 100), act: act}
}

func (r *recorder) handle(ctx context.Context, job ports.JobContext) error {
	rn := run{job: job, at: time.Now()}
	r.mu.Lock()
	r.runs = append(r.runs, rn)
	r.mu.Unlock()
	r.ch <- rn
	if r.act != nil {
		return r.act(ctx, job)
	}
	return nil
}

// next waits for the next call.
func (r *recorder) next(t *testing.T) run {
	t.Helper()
	select {
	case rn := <-r.ch:
		return rn
	case <-time.After(jobWait):
		t.Fatalf("no job ran within %s", jobWait)
		return run{}
	}
}

// none checks that no call comes within quiet.
func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case rn := <-r.ch:
		t.Fatalf("unexpected run: %s attempt %d args %s", rn.job.Kind, rn.job.Attempt, rn.job.Args)
	case <-time.After(quiet):
	}
}

func payload(t *testing.T, job ports.JobContext) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(job.Args, &m); err != nil {
		t.Fatalf("job args %s: %v", job.Args, err)
	}
	return m
}

// decode is payload for handlers, which run off the test goroutine and so
// must not stop the test.
func decode(job ports.JobContext) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(job.Args, &m)
	return m
}

// setupRunner registers the recorder under kind on a new set's job runner and
// returns it, stopped when the test ends.
func setupRunner(t *testing.T, newSet NewSet, kind ports.JobKind, rec *recorder) adapterset.Set {
	t.Helper()
	set := newSet(t)
	kind.Handler = rec.handle
	set.JobRunner.Register(kind)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := set.JobRunner.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return set
}

func startRunner(t *testing.T, ctx context.Context, set adapterset.Set) {
	t.Helper()
	if err := set.JobRunner.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

func scheduleJob(t *testing.T, ctx context.Context, set adapterset.Set, job platform.Job) {
	t.Helper()
	if err := set.JobRunner.Schedule(ctx, job); err != nil {
		t.Fatal(err)
	}
}

// RunJobRunner checks the ports.JobRunner contract.
func RunJobRunner(t *testing.T, newSet NewSet) {
	runJobRunner1(t, newSet)
	runJobRunner2(t, newSet)
	runJobRunner3(t, newSet)
}

// runJobRunner1 is part 1 of RunJobRunner: a job runs with its args; a
// periodic kind runs at start and then every period, one at a time; an
// unregistered kind is refused; a job scheduled in a unit of work runs once
// it commits; a job scheduled in a rolled-back unit of work never runs; a
// failed job retries with its attempt number.
func runJobRunner1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	errFail := errors.New("use case failed")
	t.Run("a job runs with its args", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(nil)
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_echo", MaxAttempts: 3}, rec)
		startRunner(t, ctx, set)
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_echo", Args: map[string]any{"n": 1, "s": "x"}})
		job := rec.next(t).job
		if job.ID == "" || job.Kind != "contract_echo" || job.Attempt != 1 || job.MaxAttempts != 3 {
			t.Fatalf("job = %+v", job)
		}
		if p := payload(t, job); p["n"] != 1.0 || p["s"] != "x" {
			t.Fatalf("args = %s", job.Args)
		}
		rec.none(t)
	})

	t.Run("a periodic kind runs at start and then every period, one at a time", func(t *testing.T) {
		t.Parallel()
		const every = 300 * time.Millisecond
		var running, overlapped atomic.Int32
		rec := newRecorder(func(context.Context, ports.JobContext) error {
			if running.Add(1) > 1 {
				overlapped.Add(1)
			}
			defer running.Add(-1)
			time.Sleep(every * 2) // longer than a period: the next must wait
			return nil
		})
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_periodic", Every: every}, rec)
		startRunner(t, ctx, set)
		first := rec.next(t)
		second := rec.next(t)
		if gap := second.at.Sub(first.at); gap < every {
			t.Fatalf("periodic runs %s apart, want at least the period %s", gap, every)
		}
		if string(first.job.Args) != "{}" {
			t.Fatalf("periodic args = %s, want {}", first.job.Args)
		}
		if n := overlapped.Load(); n != 0 {
			t.Fatalf("%d periodic runs overlapped the one before", n)
		}
	})

	t.Run("an unregistered kind is refused", func(t *testing.T) {
		t.Parallel()
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_known"}, newRecorder(nil))
		if err := set.JobRunner.Schedule(ctx, platform.Job{Kind: "contract_unknown"}); err == nil {
			t.Fatal("Schedule accepted an unregistered kind")
		}
	})

	t.Run("a job scheduled in a unit of work runs once it commits", func(t *testing.T) {
		t.Parallel()
		var committed atomic.Bool
		var sawCommitted atomic.Bool
		rec := newRecorder(func(context.Context, ports.JobContext) error {
			sawCommitted.Store(committed.Load())
			return nil
		})
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_commit"}, rec)
		startRunner(t, ctx, set)
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			scheduleJob(t, ctx, set, platform.Job{Kind: "contract_commit", Args: map[string]any{}})
			// Give a runner that wrongly starts jobs before the commit the
			// time to do it.
			time.Sleep(300 * time.Millisecond)
			committed.Store(true)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rec.next(t)
		if !sawCommitted.Load() {
			t.Fatal("the job ran before its unit of work committed")
		}
		rec.none(t)
	})

	t.Run("a job scheduled in a rolled-back unit of work never runs", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(nil)
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_rollback"}, rec)
		startRunner(t, ctx, set)
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			scheduleJob(t, ctx, set, platform.Job{Kind: "contract_rollback", Args: map[string]any{"which": "rolled back"}})
			return errFail
		})
		if !errors.Is(err, errFail) {
			t.Fatalf("Do = %v", err)
		}
		// A committed job after it proves the runner is working.
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_rollback", Args: map[string]any{"which": "sentinel"}})
		if p := payload(t, rec.next(t).job); p["which"] != "sentinel" {
			t.Fatalf("ran %v, want the sentinel", p)
		}
		rec.none(t)
	})

	t.Run("a failed job retries with its attempt number", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(func(_ context.Context, job ports.JobContext) error {
			if job.Attempt < 3 {
				return errors.New("not yet")
			}
			return nil
		})
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_retry", MaxAttempts: 5, Backoff: fastRetry}, rec)
		startRunner(t, ctx, set)
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_retry", Args: map[string]any{}})
		var attempts []int
		var ids []string
		for range 3 {
			job := rec.next(t).job
			attempts = append(attempts, job.Attempt)
			ids = append(ids, job.ID)
			if job.MaxAttempts != 5 {
				t.Fatalf("MaxAttempts = %d, want 5", job.MaxAttempts)
			}
		}
		if !slices.Equal(attempts, []int{1, 2, 3}) || ids[0] != ids[1] || ids[1] != ids[2] {
			t.Fatalf("attempts %v of jobs %v, want 1, 2, 3 of one job", attempts, ids)
		}
		rec.none(t)
	})
}

// runJobRunner2 is part 2 of RunJobRunner: a failing job stops after
// MaxAttempts; a job waits for its RunAt; a UniqueKey keeps one pending job
// per kind; Stop lets a running job finish.
func runJobRunner2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	errFail := errors.New("use case failed")
	_ = errFail
	t.Run("a failing job stops after MaxAttempts", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(func(_ context.Context, job ports.JobContext) error {
			if decode(job)["panic"] == true {
				panic("handler panic") // counts as a failure, like an error
			}
			return errors.New("always fails")
		})
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_exhaust", MaxAttempts: 3, Backoff: fastRetry}, rec)
		startRunner(t, ctx, set)
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_exhaust", Args: map[string]any{"job": "kind default"}})
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_exhaust", Args: map[string]any{"job": "override", "panic": true}, MaxAttempts: 2})
		attempts := map[string][]int{}
		for range 5 {
			job := rec.next(t).job
			name := payload(t, job)["job"].(string)
			attempts[name] = append(attempts[name], job.Attempt)
		}
		rec.none(t)
		if !slices.Equal(attempts["kind default"], []int{1, 2, 3}) || !slices.Equal(attempts["override"], []int{1, 2}) {
			t.Fatalf("attempts = %v, want 3 of the kind's default and 2 of the override", attempts)
		}
	})

	t.Run("a job waits for its RunAt", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(nil)
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_later"}, rec)
		startRunner(t, ctx, set)
		runAt := time.Now().Add(1500 * time.Millisecond)
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_later", Args: map[string]any{}, RunAt: runAt})
		at := rec.next(t).at
		// A few milliseconds of slack for clocks read by different
		// processes (River compares with the database's now()).
		if at.Before(runAt.Add(-20 * time.Millisecond)) {
			t.Fatalf("ran %s before its RunAt", runAt.Sub(at))
		}
		if late := at.Sub(runAt); late > 3*time.Second {
			t.Fatalf("ran %s after its RunAt", late)
		}
	})

	t.Run("a UniqueKey keeps one pending job per kind", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		rec := newRecorder(func(ctx context.Context, job ports.JobContext) error {
			if decode(job)["block"] == true {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_unique"}, rec)
		// Before Start: jobs wait, and duplicates are dropped.
		for _, key := range []string{"k1", "k1", "k2"} {
			scheduleJob(t, ctx, set, platform.Job{Kind: "contract_unique", Args: map[string]any{"key": key}, UniqueKey: key})
		}
		startRunner(t, ctx, set)
		var keys []string
		for range 2 {
			keys = append(keys, payload(t, rec.next(t).job)["key"].(string))
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"k1", "k2"}) {
			t.Fatalf("ran %v, want k1 and k2 once each", keys)
		}
		rec.none(t)

		// While running: still a duplicate.
		k3 := platform.Job{Kind: "contract_unique", Args: map[string]any{"key": "k3", "block": true}, UniqueKey: "k3"}
		scheduleJob(t, ctx, set, k3)
		rec.next(t)
		scheduleJob(t, ctx, set, k3)
		close(release)
		rec.none(t)

		// Once finished, the key is free again. The runner may record the
		// end of the job a moment after the handler returns, so keep
		// scheduling until one is accepted: duplicates are no-ops, and each
		// try waits long enough for an accepted job to start.
		deadline := time.Now().Add(jobWait)
		for {
			scheduleJob(t, ctx, set, k3)
			select {
			case <-rec.ch:
			case <-time.After(time.Second):
				if time.Now().Before(deadline) {
					continue
				}
				t.Fatal("the unique key stayed taken after its job finished")
			}
			break
		}
		rec.none(t)
	})

	t.Run("Stop lets a running job finish", func(t *testing.T) {
		t.Parallel()
		var finished atomic.Bool
		rec := newRecorder(func(ctx context.Context, _ ports.JobContext) error {
			select {
			case <-time.After(300 * time.Millisecond):
				finished.Store(true)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_drain"}, rec)
		startRunner(t, ctx, set)
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_drain", Args: map[string]any{}})
		rec.next(t)
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := set.JobRunner.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}
		if !finished.Load() {
			t.Fatal("Stop returned before the running job finished")
		}
	})
}

// runJobRunner3 is part 3 of RunJobRunner: Stop cancels a job still running
// at its deadline; an attempt is bounded by the kind's Timeout.
func runJobRunner3(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	errFail := errors.New("use case failed")
	_ = errFail
	t.Run("Stop cancels a job still running at its deadline", func(t *testing.T) {
		t.Parallel()
		var cancelled atomic.Bool
		rec := newRecorder(func(ctx context.Context, _ ports.JobContext) error {
			<-ctx.Done()
			cancelled.Store(true)
			return ctx.Err()
		})
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_cancel", Timeout: time.Minute}, rec)
		startRunner(t, ctx, set)
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_cancel", Args: map[string]any{}})
		rec.next(t)
		stopCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		began := time.Now()
		_ = set.JobRunner.Stop(stopCtx) // an error is allowed: the deadline passed
		if took := time.Since(began); took > 3*time.Second {
			t.Fatalf("Stop took %s with a 2s deadline", took)
		}
		if !cancelled.Load() {
			t.Fatal("the running job's context was not cancelled")
		}
	})

	t.Run("an attempt is bounded by the kind's Timeout", func(t *testing.T) {
		t.Parallel()
		errs := make(chan error, 1)
		rec := newRecorder(func(ctx context.Context, _ ports.JobContext) error {
			<-ctx.Done()
			errs <- ctx.Err()
			return ctx.Err()
		})
		set := setupRunner(t, newSet, ports.JobKind{Name: "contract_timeout", Timeout: 200 * time.Millisecond, MaxAttempts: 1}, rec)
		startRunner(t, ctx, set)
		scheduleJob(t, ctx, set, platform.Job{Kind: "contract_timeout", Args: map[string]any{}})
		began := rec.next(t).at
		select {
		case err := <-errs:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("attempt ended with %v, want its deadline", err)
			}
			if took := time.Since(began); took > 2*time.Second {
				t.Fatalf("a 200ms attempt ran %s", took)
			}
		case <-time.After(jobWait):
			t.Fatal("the attempt never timed out")
		}
		rec.none(t)
	})
}
