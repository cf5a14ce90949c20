package memory

import (
	"context"
	"sync"
	"time"

	"github.com/qms-dev/qms/ports"
)

var (
	_ ports.RateLimiter     = (*RateLimiter)(nil)
	_ ports.RateLimitPruner = (*RateLimiter)(nil)
)

// RateLimiter keeps, per key, the times of the requests it let through in
// the last minute (a sliding log), in process memory: the single-process
// counterpart of postgres.RateLimiter, with the same arithmetic.
type RateLimiter struct {
	mu   sync.Mutex
	hits map[string][]time.Time // oldest first
	// prunedAt is when idle keys were last dropped (once a minute).
	prunedAt time.Time
}

// NewRateLimiter returns a limiter with no requests counted.
func NewRateLimiter() *RateLimiter { return &RateLimiter{hits: map[string][]time.Time{}} }

// Allow spends one request of key at now and reports whether it stays
// within limit requests in the minute up to now.
func (l *RateLimiter) Allow(_ context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	now = now.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.prunedAt) >= time.Minute {
		l.prunedAt = now
		l.prune(now)
	}
	hs := live(l.hits[key], now)
	allowed := len(hs) < limit
	if allowed {
		// Keep the log sorted even if clocks hand times out of order.
		i := len(hs)
		for i > 0 && hs[i-1].After(now) {
			i--
		}
		hs = append(hs, time.Time{})
		copy(hs[i+1:], hs[i:])
		hs[i] = now
	}
	l.hits[key] = hs
	reset := now.Add(time.Minute)
	if len(hs) > 0 {
		reset = hs[0].Add(time.Minute)
	}
	return ports.RateDecision{Allowed: allowed, Limit: limit, Remaining: max(limit-len(hs), 0), Reset: reset}, nil
}

// live drops the hits a minute old or older at now (in place).
func live(hs []time.Time, now time.Time) []time.Time {
	cut := now.Add(-time.Minute)
	i := 0
	for i < len(hs) && !hs[i].After(cut) {
		i++
	}
	return append(hs[:0], hs[i:]...)
}

// Prune forgets the keys with no request in the minute before now.
func (l *RateLimiter) Prune(_ context.Context, now time.Time) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prune(now.UTC()), nil
}

func (l *RateLimiter) prune(now time.Time) int64 {
	var n int64
	for k, hs := range l.hits {
		if len(hs) == 0 || !hs[len(hs)-1].After(now.Add(-time.Minute)) {
			delete(l.hits, k)
			n++
		}
	}
	return n
}
