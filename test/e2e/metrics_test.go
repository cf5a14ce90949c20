package e2e

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// scrapeMetrics reads the Prometheus exposition at url.
func scrapeMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") && !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	return string(b)
}

// sample returns the value of the exposition line for series (name and
// labels exactly as Prometheus writes them), or -1 when absent.
func sample(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			if v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// TestMetricsScrape calls the API on each storage and scrapes GET /metrics
// from the API's listener: requests by route template, method and status,
// rate-limit rejections, and in postgres mode the pool and River's jobs.
// Nothing that identifies an account, a key or a resource is a label.
func TestMetricsScrape(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 5 }))
		var ent struct{ ID string }
		app.API(http.MethodPost, "/entities", map[string]any{"name": "Main branch"}).Must(http.StatusCreated, &ent)
		app.API(http.MethodGet, "/queues/que_does_not_exist", nil)
		for i := 0; i < 5; i++ {
			app.API(http.MethodGet, "/entities", nil) // the last ones are over the limit of 5
		}
		text := scrapeMetrics(t, app.BaseURL+"/metrics")

		for series, atLeast := range map[string]float64{
			`qms_http_requests_total{method="POST",route="/api/v1/entities",status="201"}`:                 1,
			`qms_http_requests_total{method="GET",route="/api/v1/queues/:queueId",status="404"}`:           1,
			`qms_http_request_duration_seconds_count{method="POST",route="/api/v1/entities",status="201"}`: 1,
			`qms_http_rate_limited_total`: 1,
			`qms_http_requests_total{method="POST",route="/admin/v1/accounts",status="201"}`: 1,
		} {
			if got := sample(text, series); got < atLeast {
				t.Errorf("%s = %v, want at least %v", series, got, atLeast)
			}
		}
		// Every job kind's give-ups are exposed, at 0 from the start
		// (issue 23), in both modes.
		for _, kind := range []string{"appointments.join_line", "turns.tolerance_expired", "webhook.deliver", "workflow.forward", "retention.prune"} {
			if !strings.Contains(text, `qms_jobs_given_up_total{kind="`+kind+`"}`) {
				t.Errorf("no qms_jobs_given_up_total for %s", kind)
			}
		}
		if t.Name() == "TestMetricsScrape/postgres" {
			if got := sample(text, "qms_db_pool_max_connections"); got <= 0 {
				t.Errorf("qms_db_pool_max_connections = %v", got)
			}
			if got := sample(text, "qms_jobs_scrape_ok"); got != 1 {
				t.Errorf("qms_jobs_scrape_ok = %v, want 1", got)
			}
		}
		for _, secret := range []string{app.AccountID, app.Key, ent.ID, "que_does_not_exist"} {
			if strings.Contains(text, secret) {
				t.Errorf("the exposition contains %q", secret)
			}
		}
	})
}

// TestMetricsOnTheirOwnAddress serves the metrics on metrics.addr: they are
// there, and no longer on the API's listener.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.Metrics.Addr = addr }))
	app.API(http.MethodGet, "/entities", nil).Must(http.StatusOK, nil)

	text := scrapeMetrics(t, "http://"+addr+"/metrics")
	if got := sample(text, `qms_http_requests_total{method="GET",route="/api/v1/entities",status="200"}`); got != 1 {
		t.Errorf("requests of the API counted on the metrics listener: %v, want 1", got)
	}
	resp, err := http.Get(app.BaseURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics on the API listener with metrics.addr set: %d, want 404", resp.StatusCode)
	}
}

// TestWebhookDeliveryMetrics: attempts of webhook deliveries are counted
// by outcome with their lag, through the observer the metrics module gives
// the delivery worker.
func TestWebhookDeliveryMetrics(t *testing.T) {
	app := apptest.Memory(t)
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer ok.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer broken.Close()
	for _, u := range []string{ok.URL, broken.URL} {
		app.API(http.MethodPost, "/webhook-endpoints", map[string]any{"url": u + "/hook", "events": []string{"queue.closed"}}).Must(http.StatusCreated, nil)
	}
	q := newLiveQueue(t, app, "Pharmacy", nil)
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/close", nil).Must(http.StatusCreated, nil)

	deadline := time.Now().Add(15 * time.Second)
	for {
		text := scrapeMetrics(t, app.BaseURL+"/metrics")
		succeeded := sample(text, `qms_webhook_deliveries_total{outcome="succeeded"}`)
		failed := sample(text, `qms_webhook_deliveries_total{outcome="failed"}`)
		lagged := sample(text, `qms_webhook_delivery_lag_seconds_count{outcome="succeeded"}`)
		if succeeded >= 1 && failed >= 1 && lagged >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 15 s: succeeded %v, failed %v, lag samples %v", succeeded, failed, lagged)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
