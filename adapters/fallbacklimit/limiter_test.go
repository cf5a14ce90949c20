package fallbacklimit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/qms-dev/qms/adapters/fallbacklimit"
	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/ports"
)

var errDown = errors.New("database down")

// shared is a limiter that fails with err while it is set.
type shared struct {
	ports.RateLimiter
	err error
}

func (s *shared) Allow(ctx context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	if s.err != nil {
		return ports.RateDecision{}, s.err
	}
	return s.RateLimiter.Allow(ctx, key, limit, now)
}

// TestCountsLocallyWhileTheSharedLimiterCannot: while the shared limiter
// fails with a storage fault, requests are counted by the local one, the
// limit still holds and the decision carries its numbers; the metrics say
// so; once the shared one answers, it counts again. Its other errors pass.
func TestCountsLocallyWhileTheSharedLimiterCannot(t *testing.T) {
	s := &shared{RateLimiter: memory.NewRateLimiter()}
	m := fallbacklimit.NewMetrics()
	l := fallbacklimit.New(s, memory.NewRateLimiter(), func(err error) bool { return errors.Is(err, errDown) },
		slog.New(slog.NewTextHandler(io.Discard, nil)), m)
	ctx, now := context.Background(), time.Unix(1_700_000_000, 0)

	s.err = errDown
	for i := range 3 {
		d, err := l.Allow(ctx, "k", 3, now)
		if err != nil || !d.Allowed || d.Limit != 3 || d.Remaining != 2-i {
			t.Fatalf("request %d while down: %+v, %v", i, d, err)
		}
	}
	if d, err := l.Allow(ctx, "k", 3, now); err != nil || d.Allowed {
		t.Fatalf("fourth request while down: %+v, %v; want refused by the local count", d, err)
	}
	if !l.Degraded() || metric(t, m, "qms_ratelimit_local_fallback_total") != 4 || metric(t, m, "qms_ratelimit_degraded") != 1 {
		t.Fatal("not degraded, or no metric")
	}

	s.err = nil
	if d, err := l.Allow(ctx, "k", 3, now); err != nil || !d.Allowed || d.Remaining != 2 {
		t.Fatalf("back: %+v, %v; want the shared limiter's own count", d, err)
	}
	if l.Degraded() {
		t.Fatal("still degraded once the shared limiter answers")
	}

	s.err = errors.New("a bug")
	if _, err := l.Allow(ctx, "k", 3, now); err == nil {
		t.Fatal("a non-fault error was swallowed")
	}
}

func metric(t *testing.T, m *fallbacklimit.Metrics, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			mt := mf.GetMetric()[0]
			if c := mt.GetCounter(); c != nil {
				return c.GetValue()
			}
			return mt.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
