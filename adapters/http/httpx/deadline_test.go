package httpx

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// within waits for ch to close; the bound only keeps a broken context
// from hanging the test.
func within(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("never: %s", what)
	}
}

func TestWithDeadlineEndsAtItsDeadlineWithoutATimer(t *testing.T) {
	ctx, cancel := withDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
	defer cancel()
	if _, ok := ctx.(*deadlineCtx); !ok {
		t.Fatalf("under Background: %T", ctx)
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("before the deadline: %v", err)
	}
	// Nobody has asked for Done: Err alone must see the deadline pass.
	for end := time.Now().Add(10 * time.Second); ctx.Err() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("Err never reported the deadline")
		}
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v", err)
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done is open after Err reported the deadline")
	}
	cancel()
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a cancel after the deadline changed Err to %v", err)
	}
}

func TestWithDeadlineClosesDoneAtItsDeadline(t *testing.T) {
	ctx, cancel := withDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
	defer cancel()
	within(t, "Done closed at the deadline", ctx.Done())
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v", err)
	}
	if d, ok := ctx.Deadline(); !ok || d.IsZero() {
		t.Fatalf("Deadline = %v %v", d, ok)
	}
}

func TestWithDeadlineCancel(t *testing.T) {
	ctx, cancel := withDeadline(context.Background(), time.Now().Add(time.Hour))
	child, stopChild := context.WithTimeout(ctx, 2*time.Hour)
	defer stopChild()
	called := make(chan struct{})
	context.AfterFunc(ctx, func() { close(called) })
	cancel()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err = %v", err)
	}
	within(t, "Done closed by cancel", ctx.Done())
	within(t, "the derived context ended", child.Done())
	within(t, "the AfterFunc ran", called)
	if err := child.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("derived Err = %v", err)
	}
	// A cancel that did not wait on anything made no channel until
	// asked, and still answers closed.
	ctx2, cancel2 := withDeadline(context.Background(), time.Now().Add(time.Hour))
	cancel2()
	within(t, "Done of a context cancelled before anyone asked", ctx2.Done())
}

// TestWithDeadlineReachesDerivedContexts: contexts derived from it (as a
// driver derives them) end at its deadline, and an AfterFunc stopped in
// time never runs.
func TestWithDeadlineReachesDerivedContexts(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	ctx, cancel := withDeadline(parent, time.Now().Add(30*time.Millisecond))
	defer cancel()
	if ctx.Value(key{}) != "v" {
		t.Fatal("values of the parent are lost")
	}
	child, stopChild := context.WithCancel(ctx)
	defer stopChild()
	ran := false
	stop := context.AfterFunc(ctx, func() { ran = true })
	if !stop() {
		t.Fatal("stopping a waiting AfterFunc reported false")
	}
	within(t, "the derived context ended at the deadline", child.Done())
	if err := child.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("derived Err = %v", err)
	}
	if ran {
		t.Fatal("a stopped AfterFunc ran")
	}
}

func TestWithDeadlineUnderACancellableParentIsTheStandardOne(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := withDeadline(parent, time.Now().Add(time.Hour))
	defer cancel()
	if _, ok := ctx.(*deadlineCtx); ok {
		t.Fatal("a cancellable parent got the lazy context")
	}
	cancelParent()
	within(t, "the parent's cancel reached it", ctx.Done())
}

// TestWithDeadlineConcurrently exercises Done, Err, AfterFunc and cancel
// at once, for the race detector, and checks everyone sees one end.
func TestWithDeadlineConcurrently(t *testing.T) {
	for range 200 {
		ctx, cancel := withDeadline(context.Background(), time.Now().Add(time.Millisecond))
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch i % 4 {
				case 0:
					<-ctx.Done()
				case 1:
					for ctx.Err() == nil {
						time.Sleep(100 * time.Microsecond)
					}
				case 2:
					done := make(chan struct{})
					context.AfterFunc(ctx, func() { close(done) })
					<-done
				case 3:
					cancel()
					<-ctx.Done()
				}
				errs <- ctx.Err()
			}()
		}
		wg.Wait()
		close(errs)
		var first error
		for err := range errs {
			if err == nil || (first != nil && err != first) {
				t.Fatalf("ends seen: %v and %v", first, err)
			}
			first = err
		}
	}
}
