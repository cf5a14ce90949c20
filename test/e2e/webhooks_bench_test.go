package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/adapters/webhookclient"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/webhooks"
	whmodule "github.com/qms-dev/qms/modules/webhooks"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// BenchmarkWebhookThroughput measures webhooks end to end on Postgres:
// 10,000 events raised through the API (closing and opening runs, from 16
// clients at once) to one local receiver answering 200. It reports the
// deliveries per second, from the first commit to the last receipt, and
// the lag from commit to receipt (p50, p99). The commit time of an event is
// when its API call answered, just after the commit.
//
//	QMS_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable \
//	  go test ./test/e2e -run '^$' -bench WebhookThroughput -benchtime 1x
func BenchmarkWebhookThroughput(b *testing.B) {
	const events, clients = 10_000, 16
	for range b.N {
		a := apptest.Postgres(b, apptest.Unscribbled(), whNoLimit)
		rc := newWhReceiver(b, whStatic(http.StatusOK))
		runs := make([]string, clients)
		for i := range runs {
			runs[i] = whRun(b, a)
		}
		whEndpoint(b, a, rc.URL(), "queue.closed", "queue.opened")

		// commits[run][k] is when the k-th event of run was committed.
		commits := make([][]time.Time, clients)
		var wg sync.WaitGroup
		start := time.Now()
		b.ResetTimer()
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < events/clients; k++ {
					whToggle(b, a, runs[c], []string{"close", "open"}[k%2])
					commits[c] = append(commits[c], time.Now())
				}
			}()
		}
		wg.Wait()
		produced := time.Since(start)
		hits := rc.wait(b, events, 5*time.Minute)
		b.StopTimer()

		// Events of one run are raised one after the other, so the k-th
		// delivery of a run by the body's createdAt is its k-th commit.
		byRun := map[string][]whHit{}
		for i := range hits {
			var body whBody
			var data struct {
				QueueRunID string `json:"queueRunId"`
			}
			_ = json.Unmarshal(hits[i].Body, &body)
			_ = json.Unmarshal(body.Data, &data)
			byRun[data.QueueRunID] = append(byRun[data.QueueRunID], hits[i])
		}
		var lags []time.Duration
		last := start
		for c, run := range runs {
			hs := byRun[run]
			if len(hs) != len(commits[c]) {
				b.Fatalf("run %s: %d deliveries for %d events", run, len(hs), len(commits[c]))
			}
			slices.SortStableFunc(hs, compareCreatedAt)
			for k, h := range hs {
				lags = append(lags, h.At.Sub(commits[c][k]))
				if h.At.After(last) {
					last = h.At
				}
			}
		}
		slices.Sort(lags)
		total := last.Sub(start)
		b.ReportMetric(float64(events)/total.Seconds(), "deliveries/s")
		b.ReportMetric(float64(events)/produced.Seconds(), "events/s")
		b.ReportMetric(ms(lags[len(lags)/2]), "p50-lag-ms")
		b.ReportMetric(ms(lags[len(lags)*99/100]), "p99-lag-ms")
		b.ReportMetric(ms(lags[len(lags)-1]), "max-lag-ms")
		b.Logf("%d events committed in %v (%.0f/s), all delivered %v after the first commit (%.0f/s); commit-to-receipt lag p50 %v, p99 %v, max %v",
			events, produced.Round(time.Millisecond), float64(events)/produced.Seconds(), total.Round(time.Millisecond),
			float64(events)/total.Seconds(), lags[len(lags)/2].Round(time.Millisecond),
			lags[len(lags)*99/100].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
		distinct := map[string]bool{}
		for _, h := range hits {
			distinct[h.Delivery()] = true
		}
		if len(distinct) != events {
			b.Fatalf("%d distinct deliveries for %d events", len(distinct), events)
		}
	}
}

func compareCreatedAt(x, y whHit) int {
	var bx, by whBody
	_ = json.Unmarshal(x.Body, &bx)
	_ = json.Unmarshal(y.Body, &by)
	switch {
	case bx.CreatedAt < by.CreatedAt:
		return -1
	case bx.CreatedAt > by.CreatedAt:
		return 1
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkWebhookPipeline measures the webhooks pipeline alone on
// Postgres, with River runners of 10 (the application's default) and 50
// workers: 10,000 events emitted from 16 goroutines, each in a unit of work
// of its own, to one local receiver answering 200. The lag of a delivery is
// from the moment its event's unit of work committed to its receipt,
// matched exactly by a sequence number in the event's data. It shows how
// much of the end-to-end figure is the job runner's capacity rather than
// the API.
//
//	go test ./test/e2e -run '^$' -bench WebhookPipeline -benchtime 1x
func BenchmarkWebhookPipeline(b *testing.B) {
	for _, workers := range []int{riverjobs.DefaultWorkers, 50} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				webhookPipeline(b, workers)
			}
		})
	}
}

func webhookPipeline(b *testing.B, workers int) {
	const count, clients = 10_000, 16
	ctx := context.Background()
	db := pgtest.New(b)
	now := time.Now().UTC()
	if err := postgres.NewAccounts(db).CreateAccount(ctx, accounts.Account{ID: "acc_bench", Name: "Bench", Plan: "premium", CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	repo, _ := postgres.NewWebhooks(db, "")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	runner := riverjobs.New(db, riverjobs.Options{Workers: workers, Logger: quiet})
	svc := webhooks.NewService(repo, db, runner, webhookclient.New(webhookclient.Options{AllowPrivate: true}),
		platform.SystemClock{}, webhooks.Options{Logger: quiet})
	runner.Register(whmodule.DeliveryKind(svc))
	bus := events.NewBus(postgres.NewEvents(db))
	bus.Subscribe(svc)
	rc := newWhReceiver(b, whStatic(http.StatusOK))
	secret := webhooks.NewSecret()
	if err := repo.CreateEndpoint(ctx, webhooks.Endpoint{ID: "whe_bench", AccountID: "acc_bench", URL: rc.URL(),
		Events: []string{"queue.closed"}, Secret: secret, CreatedAt: now}); err != nil {
		b.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = runner.Stop(context.Background()) })

	commits := make([]time.Time, count)
	var wg sync.WaitGroup
	start := time.Now()
	b.ResetTimer()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := c; seq < count; seq += clients {
				err := db.Do(ctx, func(ctx context.Context) error {
					return bus.Emit(ctx, platform.Event{AccountID: "acc_bench", Name: "queue.closed", OccurredAt: time.Now(),
						Data: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq))})
				})
				if err != nil {
					b.Error(err)
					return
				}
				commits[seq] = time.Now()
			}
		}()
	}
	wg.Wait()
	produced := time.Since(start)
	hits := rc.wait(b, count, 10*time.Minute)
	b.StopTimer()

	lags := make([]time.Duration, 0, count)
	last := start
	seen := map[int]bool{}
	for _, h := range hits {
		var body struct {
			Data struct {
				Seq int `json:"seq"`
			} `json:"data"`
		}
		if err := json.Unmarshal(h.Body, &body); err != nil {
			b.Fatal(err)
		}
		if seen[body.Data.Seq] {
			continue // a repeated delivery: the first receipt counts
		}
		seen[body.Data.Seq] = true
		lags = append(lags, h.At.Sub(commits[body.Data.Seq]))
		if h.At.After(last) {
			last = h.At
		}
	}
	if len(seen) != count {
		b.Fatalf("%d distinct events received, want %d", len(seen), count)
	}
	slices.Sort(lags)
	total := last.Sub(start)
	b.ReportMetric(float64(count)/total.Seconds(), "deliveries/s")
	b.ReportMetric(float64(count)/produced.Seconds(), "events/s")
	b.ReportMetric(ms(lags[len(lags)/2]), "p50-lag-ms")
	b.ReportMetric(ms(lags[len(lags)*99/100]), "p99-lag-ms")
	b.Logf("%d workers: %d events committed in %v (%.0f/s), all delivered %v after the first commit (%.0f/s); lag p50 %v, p99 %v, max %v",
		workers, count, produced.Round(time.Millisecond), float64(count)/produced.Seconds(), total.Round(time.Millisecond),
		float64(count)/total.Seconds(), lags[len(lags)/2].Round(time.Millisecond),
		lags[len(lags)*99/100].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
}
