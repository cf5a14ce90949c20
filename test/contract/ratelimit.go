package contract

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/ports"
)

// RunRateLimiter checks the ports.RateLimiter contract: fixed one-minute
// windows per key, an exact budget under concurrency.
func RunRateLimiter(t *testing.T, newLimiter func(t *testing.T) ports.RateLimiter) {
	ctx := context.Background()
	window := time.Now().UTC().Truncate(time.Minute)

	t.Run("the limit is exact under 50 concurrent calls", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		const calls, limit = 50, 20
		decisions := make([]ports.RateDecision, calls)
		errs := make([]error, calls)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				decisions[i], errs[i] = l.Allow(ctx, "concurrent", limit, window.Add(30*time.Second))
			}()
		}
		wg.Wait()
		var remaining []int
		for i, d := range decisions {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if d.Limit != limit || !d.Reset.Equal(window.Add(time.Minute)) {
				t.Fatalf("decision %+v: want limit %d, reset %v", d, limit, window.Add(time.Minute))
			}
			if d.Allowed {
				remaining = append(remaining, d.Remaining)
			} else if d.Remaining != 0 {
				t.Fatalf("refused decision with %d remaining", d.Remaining)
			}
		}
		slices.Sort(remaining)
		want := make([]int, limit)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(remaining, want) {
			t.Fatalf("allowed %d calls with remaining %v, want each of 0..%d once", len(remaining), remaining, limit-1)
		}
	})

	t.Run("a new window starts a new budget", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		allow := func(at time.Time) ports.RateDecision {
			t.Helper()
			d, err := l.Allow(ctx, "windows", 2, at)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		last := window.Add(time.Minute - time.Millisecond)
		allow(window)
		if d := allow(last); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("second call in the window: %+v", d)
		}
		if d := allow(last); d.Allowed {
			t.Fatalf("third call in the window allowed: %+v", d)
		}
		next := window.Add(time.Minute)
		if d := allow(next); !d.Allowed || d.Remaining != 1 || !d.Reset.Equal(next.Add(time.Minute)) {
			t.Fatalf("first call of the next window: %+v", d)
		}
	})

	t.Run("keys have their own budgets", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		at := window.Add(10 * time.Second)
		if d, err := l.Allow(ctx, "key-a", 1, at); err != nil || !d.Allowed {
			t.Fatalf("key-a: %+v %v", d, err)
		}
		if d, err := l.Allow(ctx, "key-b", 1, at); err != nil || !d.Allowed {
			t.Fatalf("key-b: %+v %v", d, err)
		}
		if d, err := l.Allow(ctx, "key-a", 1, at); err != nil || d.Allowed {
			t.Fatalf("key-a again: %+v %v", d, err)
		}
	})
}
