package memory

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/qms-dev/qms/ports"
)

// RateLimiter counts, per key, the requests it let through in one-second
// buckets over the last minute, in process memory: the single-process
// counterpart of postgres.RateLimiter, with the same arithmetic.
//
// Its keys are spread over rateShards shards, each under a lock of its
// own: one lock for all of them was taken by every API request, from
// every core (issue 30, P1). A key always falls in the same shard, so its
// count is as exact as under one lock.
type RateLimiter struct {
	shards [rateShards]rateShard
}

const rateShards = 16

// rateShard is the keys of one shard.
type rateShard struct {
	mu      sync.Mutex
	buckets map[string]*rateKey
	// prunedAt is the second the shard's idle keys were last dropped
	// (once a minute).
	prunedAt int64
	// The shards' locks on cache lines of their own.
	_ [64]byte
}

var rateSeed = maphash.MakeSeed()

// shard is key's shard.
func (l *RateLimiter) shard(key string) *rateShard {
	return &l.shards[maphash.String(rateSeed, key)%rateShards]
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
func NewRateLimiter() *RateLimiter {
	l := &RateLimiter{}
	for i := range l.shards {
		l.shards[i].buckets = map[string]*rateKey{}
	}
	return l
}

// Allow spends one request of key at now and reports whether it stays
// within limit requests in the sliding minute.
func (l *RateLimiter) Allow(_ context.Context, key string, limit int, now time.Time) (ports.RateDecision, error) {
	sec := now.Unix()
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sec-sh.prunedAt >= ports.RateWindowSeconds {
		sh.prunedAt = sec
		sh.pruneIdle(sec)
	}
	k := sh.buckets[key]
	if k == nil {
		k = &rateKey{}
		sh.buckets[key] = k
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
func (sh *rateShard) pruneIdle(now int64) {
	for k, rk := range sh.buckets {
		if bs := rk.bs; len(bs) == 0 || bs[len(bs)-1].sec < now-ports.RateWindowSeconds {
			delete(sh.buckets, k)
		}
	}
}

// prune forgets at most limit keys whose last request was before before
// (the rate limiter's retention task, PruneRateLimits; before is minutes old, so
// their windows are over).
func (l *RateLimiter) prune(before time.Time, limit int) (n int) {
	cut := before.Unix()
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for k, rk := range sh.buckets {
			if n >= limit {
				break
			}
			if bs := rk.bs; len(bs) == 0 || bs[len(bs)-1].sec < cut {
				delete(sh.buckets, k)
				n++
			}
		}
		sh.mu.Unlock()
		if n >= limit {
			break
		}
	}
	return n
}
