package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/fakeprovider"
)

// BenchmarkNotifySustained takes turns with phones from 8 clients and
// measures the joined messages reaching a fake Twilio: messages per second
// from the first commit to the last receipt, and each message's latency
// from its turn's create request (the commit is within it) to the
// provider's receipt.
//
//	go test -run '^$' -bench NotifySustained -benchtime 1x ./test/e2e/
func BenchmarkNotifySustained(b *testing.B) {
	for _, mode := range []struct {
		name  string
		start func(t testing.TB, opts ...apptest.Option) *apptest.App
	}{{"memory", apptest.Memory}, {"postgres", apptest.Postgres}} {
		b.Run(mode.name, func(b *testing.B) {
			const turns, clients = 400, 8
			fake := fakeprovider.NewTwilio(ntSID, ntToken)
			defer fake.Close()
			a := mode.start(b, ntTwilio(fake.URL()))
			var e struct {
				ID string `json:"id"`
			}
			a.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
			var q struct {
				Runs []struct {
					ID string `json:"id"`
				} `json:"runs"`
			}
			a.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Counter", "type": "TURN"}).Must(http.StatusCreated, &q)
			run := q.Runs[0].ID
			// No near_front: one message per turn.
			var mu sync.Mutex
			committed := map[string]time.Time{}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := c; i < turns; i += clients {
						phone := fmt.Sprintf("+346001%05d", i)
						// The commit happens between the request and its answer:
						// latencies count from the request, an upper bound.
						at := time.Now()
						r := a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{"phone": phone})
						if r.Status != http.StatusCreated {
							b.Errorf("take: %d %s", r.Status, r.Body)
							return
						}
						mu.Lock()
						committed[phone] = at
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			got := fake.Wait(turns, 60*time.Second)
			b.StopTimer()
			if len(got) != turns {
				b.Fatalf("the provider got %d of %d", len(got), turns)
			}
			var lat []time.Duration
			last := start
			for _, m := range got {
				lat = append(lat, m.At.Sub(committed[m.To]))
				if m.At.After(last) {
					last = m.At
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			rate := float64(turns) / last.Sub(start).Seconds()
			b.ReportMetric(rate, "msgs/s")
			b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
		})
	}
}
