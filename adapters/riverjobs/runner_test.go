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

// A process whose modules register no job kind still starts and stops.
func TestRunnerWithoutKinds(t *testing.T) {
	t.Parallel()
	r := riverjobs.New(pgtest.New(t), riverjobs.Options{Logger: quietLogger})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A kind with a Queue of its own runs in that River queue, sized by
// QueueWorkers, beside the default queue's kinds: a delivery burst must
// neither wait behind other jobs nor hold them up.
func TestKindRunsInItsOwnQueue(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	r := riverjobs.New(db, riverjobs.Options{Logger: quietLogger, QueueWorkers: map[string]int{"own": 3}})
	ran := make(chan string, 2)
	for _, k := range []ports.JobKind{{Name: "in_own", Queue: "own"}, {Name: "in_default"}} {
		r.Register(ports.JobKind{Name: k.Name, Queue: k.Queue, Handler: func(context.Context, ports.JobContext) error {
			ran <- k.Name
			return nil
		}})
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	for _, kind := range []string{"in_own", "in_default"} {
		if err := r.Schedule(ctx, platform.Job{Kind: kind, Args: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case k := <-ran:
			got[k] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("jobs run: %v", got)
		}
	}
	var queue string
	if err := db.Pool.QueryRow(ctx, `SELECT queue FROM river_job WHERE kind = 'in_own'`).Scan(&queue); err != nil {
		t.Fatal(err)
	}
	if queue != "own" {
		t.Fatalf("in_own ran from queue %q, want own", queue)
	}
}
