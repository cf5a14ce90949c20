package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// BenchmarkIntakeCPU takes turns (POST /queue-runs/{id}/turns with {}, as
// test/load/post.lua does) and reports the test process's CPU per intake
// (user and system, from getrusage: the qms process under test and its Go
// client; cpu-µs/op) besides the allocations: the Go side's cost without
// the load's contention, a steadier yardstick than the load runs when two
// builds differ by a few per cent (issue 30, fourth session). In "alone"
// one client takes each intake on the next of 8 runs, so none waits for
// another and every intake is a transaction of its own; in "chained" 8
// clients share one run, so intakes wait at the run's gate and join each
// other's transactions (group commit).
//
//	go test -run '^$' -bench IntakeCPU -benchtime 2000x -count 5 ./test/e2e/
func BenchmarkIntakeCPU(b *testing.B) {
	for _, c := range []struct {
		name          string
		runs, clients int
	}{{"alone", 8, 1}, {"chained", 1, 8}} {
		b.Run(c.name, func(b *testing.B) { intakeCPU(b, c.runs, c.clients) })
	}
}

func intakeCPU(b *testing.B, runs, clients int) {
	a := apptest.Postgres(b, apptest.Unscribbled(), apptest.WithConfig(func(cfg *config.Config) {
		cfg.RateLimit.PerMinute = 1_000_000_000
	}))
	var e struct {
		ID string `json:"id"`
	}
	a.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
	ids := make([]string, runs)
	for i := range ids {
		var q struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
		}
		a.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": fmt.Sprintf("Q%d", i), "type": "TURN"}).
			Must(http.StatusCreated, &q)
		ids[i] = q.Runs[0].ID
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 30 * time.Second}
	post := func(run string) error {
		req, err := http.NewRequest(http.MethodPost, a.BaseURL+"/api/v1/queue-runs/"+run+"/turns", bytes.NewReader([]byte("{}")))
		if err != nil {
			return err
		}
		req.Header.Set("X-API-Key", a.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	// Warm up: every connection's statements prepared, the caches filled.
	for i := range 200 {
		if err := post(ids[i%runs]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	before := cpuTime()
	b.ResetTimer()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		fail error
	)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < b.N; i += clients {
				if err := post(ids[i%runs]); err != nil {
					mu.Lock()
					fail = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if fail != nil {
		b.Fatal(fail)
	}
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
