package riverjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestWatchdogStartsRiverAgain stops River's client behind the runner's
// back, as a component giving up would: the watchdog starts River again,
// and a job scheduled after that runs.
func TestWatchdogStartsRiverAgain(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger, WatchdogInterval: 100 * time.Millisecond})
	ran := make(chan string, 4)
	r.Register(ports.JobKind{Name: "probe", Handler: func(_ context.Context, j ports.JobContext) error {
		ran <- string(j.Args)
		return nil
	}})
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	client, err := r.Client()
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Schedule(ctx, platform.Job{Kind: "probe", Args: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatalf("the job never ran: River was not started again (restarts %d)", r.Restarts())
	}
	if r.Restarts() != 1 {
		t.Fatalf("%d restarts, want 1", r.Restarts())
	}
}

// TestWatchdogLeavesAHealthyRiverAlone: a process idle for longer than
// StuckAfter, with nothing overdue, is not restarted.
func TestWatchdogLeavesAHealthyRiverAlone(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger, WatchdogInterval: 50 * time.Millisecond, StuckAfter: 200 * time.Millisecond})
	ran := make(chan struct{}, 100)
	r.Register(ports.JobKind{Name: "tick", Handler: func(context.Context, ports.JobContext) error {
		ran <- struct{}{}
		return nil
	}})
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	for i := range 5 {
		if err := r.Schedule(ctx, platform.Job{Kind: "tick", Args: map[string]any{"n": i}}); err != nil {
			t.Fatal(err)
		}
		<-ran
		time.Sleep(300 * time.Millisecond) // idle past StuckAfter, nothing overdue
	}
	if n := r.Restarts(); n != 0 {
		t.Fatalf("the watchdog restarted a healthy River %d times", n)
	}
}
