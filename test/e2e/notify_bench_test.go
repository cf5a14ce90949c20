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

// BenchmarkNotifySustained takes turns with phones and measures the joined
// messages reaching a fake Twilio, in two loads:
//
//   - burst: 400 turns from 8 clients as fast as they go; msgs/s is the
//     rate from the first request to the last receipt, what the send path
//     sustains at most;
//   - paced: 50 turns a second for 10 s from 8 clients, an offered load the
//     process keeps up with; the latencies are those of a steady flow.
//
// Each message's latency is reported twice: from its turn's createdAt
// (stamped inside the transaction, just before the commit: the
// commit→receipt figure) and from the create request (an upper bound that
// adds the request's own time). The fake runs on the same machine, so the
// clocks agree.
//
//	go test -run '^$' -bench NotifySustained -benchtime 1x ./test/e2e/
func BenchmarkNotifySustained(b *testing.B) {
	for _, mode := range []struct {
		name  string
		start func(t testing.TB, opts ...apptest.Option) *apptest.App
	}{{"memory", apptest.Memory}, {"postgres", apptest.Postgres}} {
		for _, load := range []struct {
			name  string
			turns int
			every time.Duration // between two requests of the whole load; 0: as fast as possible
		}{{"burst", 400, 0}, {"paced", 500, 20 * time.Millisecond}} {
			b.Run(mode.name+"/"+load.name, func(b *testing.B) {
				notifySustained(b, mode.start, load.turns, load.every)
			})
		}
	}
}

func notifySustained(b *testing.B, start func(t testing.TB, opts ...apptest.Option) *apptest.App, turns int, every time.Duration) {
	const clients = 8
	fake := fakeprovider.NewTwilio(ntSID, ntToken)
	defer fake.Close()
	a := start(b, ntTwilio(fake.URL()))
	var e struct {
		ID string `json:"id"`
	}
	a.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
	var q struct {
		ID   string `json:"id"`
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	a.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Counter", "type": "TURN"}).Must(http.StatusCreated, &q)
	run := q.Runs[0].ID
	// No near_front: one message per turn.
	a.API(http.MethodPut, "/queues/"+q.ID+"/notifications", map[string]any{"moments": []string{"joined"}}).Must(http.StatusOK, nil)
	type sent struct{ requested, created time.Time }
	var mu sync.Mutex
	at := map[string]sent{}
	b.ResetTimer()
	begin := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < turns; i += clients {
				if every > 0 {
					time.Sleep(time.Until(begin.Add(time.Duration(i) * every)))
				}
				phone := fmt.Sprintf("+346001%05d", i)
				req := time.Now()
				var v struct {
					CreatedAt time.Time `json:"createdAt"`
				}
				r := a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{"phone": phone})
				if r.Status != http.StatusCreated {
					b.Errorf("take: %d %s", r.Status, r.Body)
					return
				}
				r.Decode(&v)
				mu.Lock()
				at[phone] = sent{req, v.CreatedAt}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got := fake.Wait(turns, 120*time.Second)
	b.StopTimer()
	if len(got) != turns {
		b.Fatalf("the provider got %d of %d", len(got), turns)
	}
	var fromCommit, fromRequest []time.Duration
	last := begin
	for _, m := range got {
		s := at[m.To]
		fromCommit = append(fromCommit, m.At.Sub(s.created))
		fromRequest = append(fromRequest, m.At.Sub(s.requested))
		if m.At.After(last) {
			last = m.At
		}
	}
	pct := func(d []time.Duration, p int) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[min(len(d)-1, len(d)*p/100)].Microseconds()) / 1000
	}
	b.ReportMetric(float64(turns)/last.Sub(begin).Seconds(), "msgs/s")
	b.ReportMetric(pct(fromCommit, 50), "commit-p50-ms")
	b.ReportMetric(pct(fromCommit, 99), "commit-p99-ms")
	b.ReportMetric(pct(fromRequest, 50), "request-p50-ms")
	b.ReportMetric(pct(fromRequest, 99), "request-p99-ms")
}
