package memory

import (
	"context"
	"sync"
	"time"

	"github.com/qms-dev/qms/ports"
)

// RateLimiter counts, per key, the requests it let through in one-second
// buckets over the last minute, in process memory: the single-process
// counterpart of postgres.RateLimiter, with the same arithmetic.
type RateLimiter struct {
	mu      sync.Mutex
	buckets map[string]*rateKey
	// prunedAt is the second idle keys were last dropped (once a minute).
	prunedAt int64
}

// rateKey is one key's buckets, ascending by second, and the sum of
// their counts. A key's entry is a pointer and its total kept, so a
// request looks the key up once and touches only the buckets that
// change: writing the slice back into the map, summing a minute of
// buckets and moving them down in place every request were most of
// Allow's cost under P1's load (issue 30).
type rateKey struct {
	bs    []rateBucket
	total int
}

// rateBucket is the requests of one second.
type rateBucket struct {
	sec   int64
	count int
}

// NewRateLimiter returns a limiter with no requests counted.
func NewRateLimiter() *RateLimiter { return &RateLimiter{buckets: map[string]*rateKey{}} }

// Allow spends one request of key at now and reports whether it stays
// within limit requests in the sliding minute.
func (l *RateLimiter) Allow(_ context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	sec := now.Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	if sec-l.prunedAt >= ports.RateWindowSeconds {
		l.prunedAt = sec
		l.pruneIdle(sec)
	}
	k := l.buckets[key]
	if k == nil {
		k = &rateKey{}
		l.buckets[key] = k
	}
	k.live(sec)
	allowed := k.total < limit
	if allowed {
		k.bs = addHit(k.bs, sec)
		k.total++
	}
	var oldest *int64
	if len(k.bs) > 0 {
		oldest = &k.bs[0].sec
	}
	return ports.RateDecisionOf(allowed, limit, k.total, oldest, sec), nil
}

// live drops the buckets past the window at second now (in place, when
// there are any), and their counts from the total.
func (k *rateKey) live(now int64) {
	i := 0
	for i < len(k.bs) && k.bs[i].sec < now-ports.RateWindowSeconds {
		k.total -= k.bs[i].count
		i++
	}
	if i > 0 {
		k.bs = append(k.bs[:0], k.bs[i:]...)
	}
}

// addHit counts a request in second sec's bucket, keeping the order even
// when clocks hand seconds out of order.
func addHit(bs []rateBucket, sec int64) []rateBucket {
	i := len(bs)
	for i > 0 && bs[i-1].sec > sec {
		i--
	}
	if i > 0 && bs[i-1].sec == sec {
		bs[i-1].count++
		return bs
	}
	bs = append(bs, rateBucket{})
	copy(bs[i+1:], bs[i:])
	bs[i] = rateBucket{sec: sec, count: 1}
	return bs
}

// pruneIdle forgets the keys with no live bucket at second now.
func (l *RateLimiter) pruneIdle(now int64) {
	for k, rk := range l.buckets {
		if bs := rk.bs; len(bs) == 0 || bs[len(bs)-1].sec < now-ports.RateWindowSeconds {
			delete(l.buckets, k)
		}
	}
}

// prune forgets at most limit keys whose last request was before before
// (the rate limiter's retention task, PruneRateLimits; before is minutes old, so
// their windows are over).
func (l *RateLimiter) prune(before time.Time, limit int) (n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cut := before.Unix()
	for k, rk := range l.buckets {
		if n >= limit {
			break
		}
		if bs := rk.bs; len(bs) == 0 || bs[len(bs)-1].sec < cut {
			delete(l.buckets, k)
			n++
		}
	}
	return n
}
