package memory

import (
	"context"
	"sync"
	"time"

	"github.com/qms-dev/qms/ports"
)

var _ ports.RateLimiter = (*RateLimiter)(nil)

// RateLimiter counts requests per key in fixed one-minute windows, in
// process memory: the single-process counterpart of postgres.RateLimiter,
// with the same arithmetic.
type RateLimiter struct {
	mu     sync.Mutex
	counts map[rateWindow]int
	// prunedAt is the window of the last prune: past windows are dropped
	// once per minute, so the map holds about two windows per active key.
	prunedAt time.Time
}

type rateWindow struct {
	key   string
	start time.Time
}

// NewRateLimiter returns a limiter with no requests counted.
func NewRateLimiter() *RateLimiter { return &RateLimiter{counts: map[rateWindow]int{}} }

// Allow counts one request for key in the window holding now and reports
// whether it stays within limit.
func (l *RateLimiter) Allow(_ context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	start := now.UTC().Truncate(time.Minute)
	l.mu.Lock()
	defer l.mu.Unlock()
	if start.After(l.prunedAt) {
		l.prunedAt = start
		for w := range l.counts {
			if w.start.Before(start.Add(-time.Minute)) {
				delete(l.counts, w)
			}
		}
	}
	w := rateWindow{key: key, start: start}
	l.counts[w]++
	count := l.counts[w]
	return ports.RateDecision{
		Allowed:   count <= limit,
		Limit:     limit,
		Remaining: max(limit-count, 0),
		Reset:     start.Add(time.Minute),
	}, nil
}

// prune deletes at most limit windows that started before before.
func (l *RateLimiter) prune(before time.Time, limit int) (n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.counts {
		if n >= limit {
			break
		}
		if w.start.Before(before) {
			delete(l.counts, w)
			n++
		}
	}
	return n
}
