package contract

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/ports"
)

// RunRateLimiter checks the ports.RateLimiter contract: a sliding minute
// per key (no 60 s holds more than the limit), an exact budget under
// concurrency, a Reset at which a retry goes through, and pruning.
func RunRateLimiter(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	window := time.Now().UTC().Truncate(time.Minute)

	t.Run("the limit is exact under 50 concurrent calls", func(t *testing.T) {
		t.Parallel()
		l := newSet(t).RateLimiter
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
			if reset := window.Add(91 * time.Second); d.Limit != limit || !d.Reset.Equal(reset) {
				t.Fatalf("decision %+v: want limit %d, reset %v", d, limit, reset)
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

	t.Run("no minute holds more than the limit, across a minute boundary too", func(t *testing.T) {
		t.Parallel()
		l := newSet(t).RateLimiter
		allow := func(at time.Time) ports.RateDecision {
			t.Helper()
			d, err := l.Allow(ctx, "sliding", 2, at)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		// A request counts from its second until a minute after that second
		// ends: the one at window counts until window+61s.
		first := window.Add(61 * time.Second)
		last := window.Add(time.Minute - time.Millisecond)
		if d := allow(window); !d.Allowed || d.Remaining != 1 || !d.Reset.Equal(first) {
			t.Fatalf("first call: %+v", d)
		}
		if d := allow(last); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("second call in the minute: %+v", d)
		}
		// A fixed window would start a new budget of 2 at the minute; the
		// sliding one frees a slot only when the first call's second is a
		// minute behind.
		for _, at := range []time.Time{last, window.Add(time.Minute), window.Add(61*time.Second - time.Millisecond)} {
			if d := allow(at); d.Allowed || d.Remaining != 0 || !d.Reset.Equal(first) {
				t.Fatalf("call at %v: %+v", at.Sub(window), d)
			}
		}
		// Reset is exact: a retry at Reset goes through.
		second := window.Add(59*time.Second + 61*time.Second)
		if d := allow(first); !d.Allowed || d.Remaining != 0 || !d.Reset.Equal(second) {
			t.Fatalf("retry at Reset: %+v", d)
		}
		if d := allow(first.Add(time.Second)); d.Allowed || !d.Reset.Equal(second) {
			t.Fatalf("a call with two in the last minute: %+v", d)
		}
		if d := allow(second); !d.Allowed {
			t.Fatalf("retry at the second Reset refused: %+v", d)
		}
	})

	t.Run("a burst at the end of a minute leaves no budget at the start of the next", func(t *testing.T) {
		t.Parallel()
		l := newSet(t).RateLimiter
		for i := range 3 {
			if d, err := l.Allow(ctx, "burst", 3, window.Add(59*time.Second)); err != nil || !d.Allowed {
				t.Fatalf("call %d: %+v %v", i, d, err)
			}
		}
		d, err := l.Allow(ctx, "burst", 3, window.Add(61*time.Second))
		if err != nil || d.Allowed || !d.Reset.Equal(window.Add(120*time.Second)) {
			t.Fatalf("call 2 s later, across the minute: %+v %v", d, err)
		}
	})

	t.Run("keys have their own budgets", func(t *testing.T) {
		t.Parallel()
		l := newSet(t).RateLimiter
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
