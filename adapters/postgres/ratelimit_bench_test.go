package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// BenchmarkRateLimiterAllow spends requests of the postgres limiter on the
// wall clock, the way the API does: "one key" is one busy key (a client
// calling as fast as it can), "64 keys" is 64 goroutines each on a key of
// its own, the shape of a loaded process. The limit is high enough that
// nothing is refused, so what is measured is the cost of a granted request;
// leases/op is the statements sent per request.
func BenchmarkRateLimiterAllow(b *testing.B) {
	ctx := context.Background()
	const limit = 1_000_000_000
	b.Run("one key", func(b *testing.B) {
		l := postgres.NewRateLimiter(pgtest.New(b))
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if d, err := l.Allow(ctx, "bench", limit, time.Now()); err != nil || !d.Allowed {
				b.Fatalf("%+v %v", d, err)
			}
			n++
		}
		b.ReportMetric(float64(l.LeasesForTest())/float64(n), "leases/op")
	})
	b.Run("64 keys", func(b *testing.B) {
		l := postgres.NewRateLimiter(pgtest.New(b))
		var next, n atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(32) // 64 goroutines on 2 cores, like a loaded server
		b.ResetTimer()       // not the database's creation
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("bench-%d", next.Add(1))
			for pb.Next() {
				n.Add(1)
				if d, err := l.Allow(ctx, key, limit, time.Now()); err != nil || !d.Allowed {
					b.Errorf("%+v %v", d, err)
					return
				}
			}
		})
		b.ReportMetric(float64(l.LeasesForTest())/float64(n.Load()), "leases/op")
	})
}
