package memory

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/qms-dev/qms/ports"
)

// TestRateLimiterAsItsSums: the kept total decides as the sum of a key's
// live buckets did (the limiter's arithmetic before the total), over
// random keys, limits and clocks that step back as well as forward.
func TestRateLimiterAsItsSums(t *testing.T) {
	l := NewRateLimiter()
	ref := map[string][]rateBucket{}
	rng := rand.New(rand.NewPCG(1, 2))
	sec := int64(1_700_000_000)
	refPruned := map[*rateShard]int64{}
	for i := range 200_000 {
		sec += int64(rng.IntN(3)) - int64(rng.IntN(2)) // mostly forward, at times back
		if rng.IntN(500) == 0 {
			sec += int64(rng.IntN(90)) // a quiet spell, past a window at times
		}
		key := []string{"a", "b", "c", "d", "e", "f", "g", "h"}[rng.IntN(8)]
		limit := 5 + rng.IntN(20)
		got, err := l.Allow(context.Background(), key, limit, time.Unix(sec, 0))
		if err != nil {
			t.Fatal(err)
		}
		// The reference: the sum of the live buckets, the idle keys of
		// the key's shard forgotten once a minute.
		sh := l.shard(key)
		if sec-refPruned[sh] >= ports.RateWindowSeconds {
			refPruned[sh] = sec
			for k, bs := range ref {
				if l.shard(k) == sh && (len(bs) == 0 || bs[len(bs)-1].sec < sec-ports.RateWindowSeconds) {
					delete(ref, k)
				}
			}
		}
		bs := ref[key]
		j := 0
		for j < len(bs) && bs[j].sec < sec-ports.RateWindowSeconds {
			j++
		}
		bs = append([]rateBucket(nil), bs[j:]...)
		count := 0
		for _, b := range bs {
			count += b.count
		}
		allowed := count < limit
		if allowed {
			bs = addHit(bs, sec)
			count++
		}
		ref[key] = bs
		var oldest *int64
		if len(bs) > 0 {
			oldest = &bs[0].sec
		}
		if want := ports.RateDecisionOf(allowed, limit, count, oldest, sec); got != want {
			t.Fatalf("call %d (key %s, second %d, limit %d): %+v, want %+v", i, key, sec, limit, got, want)
		}
	}
}
