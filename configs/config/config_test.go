package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
)

func TestDefaults(t *testing.T) {
	c, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Addr != ":8080" || c.Storage != config.StorageMemory || c.RateLimit.PerMinute != 120 || c.Webhooks.AllowPrivate {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestHTTPTimeouts(t *testing.T) {
	c, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := c.HTTP
	if h.ReadHeaderTimeout != 10*time.Second || h.ReadTimeout != 30*time.Second || h.WriteTimeout != 30*time.Second ||
		h.IdleTimeout != 60*time.Second || h.ShutdownTimeout != 15*time.Second {
		t.Fatalf("documented defaults: %+v", h)
	}
	c, err = config.Load("", []string{"QMS_HTTP_READ_HEADER_TIMEOUT=2s", "QMS_HTTP_READ_TIMEOUT=5s", "QMS_HTTP_WRITE_TIMEOUT=7s", "QMS_HTTP_IDLE_TIMEOUT=90s"})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.HTTP; h.ReadHeaderTimeout != 2*time.Second || h.ReadTimeout != 5*time.Second || h.WriteTimeout != 7*time.Second || h.IdleTimeout != 90*time.Second {
		t.Fatalf("QMS_HTTP_*_TIMEOUT: %+v", h)
	}
	for _, env := range []string{"QMS_HTTP_READ_HEADER_TIMEOUT", "QMS_HTTP_READ_TIMEOUT", "QMS_HTTP_WRITE_TIMEOUT", "QMS_HTTP_IDLE_TIMEOUT", "QMS_HTTP_SHUTDOWN_TIMEOUT"} {
		if _, err := config.Load("", []string{env + "=0s"}); err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%s=0s: %v", env, err)
		}
	}
}

func TestEnvironmentOverridesFileOverridesDefaults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "qms.yaml")
	if err := os.WriteFile(file, []byte("http:\n  addr: \":9000\"\nratelimit:\n  per_minute: 60\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(file, []string{"QMS_RATELIMIT_PER_MINUTE=30", "QMS_WEBHOOKS_ALLOW_PRIVATE=true"})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Addr != ":9000" || c.RateLimit.PerMinute != 30 || !c.Webhooks.AllowPrivate {
		t.Fatalf("layering: addr %q limit %d private %v", c.HTTP.Addr, c.RateLimit.PerMinute, c.Webhooks.AllowPrivate)
	}
}

func TestBadValuesNameTheirKey(t *testing.T) {
	cases := map[string][]string{
		"QMS_STORAGE":                  {"QMS_STORAGE=mysql"},
		"QMS_DATABASE_URL":             {"QMS_STORAGE=postgres", "QMS_ADMIN_TOKEN=0123456789abcdef", "QMS_DATABASE_URL=http://x"},
		"QMS_WEBHOOKS_SECRET_KEY":      {"QMS_STORAGE=postgres", "QMS_ADMIN_TOKEN=0123456789abcdef", "QMS_DATABASE_URL=postgres://u@h/db"},
		"QMS_WEBHOOKS_OLD_SECRET_KEYS": {"QMS_WEBHOOKS_SECRET_KEY=" + strings.Repeat("k", 32), "QMS_WEBHOOKS_OLD_SECRET_KEYS=short"},
		"QMS_RATELIMIT_PER_MINUTE":     {"QMS_RATELIMIT_PER_MINUTE=-5"},
		"QMS_ADMIN_TOKEN":              {"QMS_STORAGE=postgres", "QMS_DATABASE_URL=postgres://u@h/db"},
		"per_minute":                   {"QMS_RATELIMIT_PER_MINUTE=lots"},
	}
	for key, env := range cases {
		_, err := config.Load("", env)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%v: want an error naming %s, got %v", env, key, err)
		}
	}
	if _, err := config.Load("/does/not/exist.yaml", nil); err == nil {
		t.Error("a missing --config file must stop start-up")
	}
}

func TestLoadDatabaseNeedsOnlyTheDatabase(t *testing.T) {
	env := []string{"QMS_STORAGE=postgres", "QMS_DATABASE_URL=postgres://qms@db:5432/qms", "QMS_RATELIMIT_PER_MINUTE=0"}
	if _, err := config.Load("", env); err == nil {
		t.Fatal("Load accepted postgres mode without an admin token")
	}
	c, err := config.LoadDatabase("", env)
	if err != nil {
		t.Fatalf("LoadDatabase: %v", err)
	}
	if c.Database.URL != "postgres://qms@db:5432/qms" {
		t.Errorf("database url %q", c.Database.URL)
	}
	if _, err := config.LoadDatabase("", []string{"QMS_STORAGE=postgres"}); err == nil || !strings.Contains(err.Error(), "QMS_DATABASE_URL") {
		t.Errorf("without a database URL: %v", err)
	}
}

func TestPublicURLAndTrustedProxies(t *testing.T) {
	c, err := config.Load("", []string{"QMS_HTTP_PUBLIC_URL=https://queues.example.com/", "QMS_HTTP_TRUSTED_PROXIES=10.0.0.0/8, 127.0.0.1,::1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.ParseTrustedProxies(c.HTTP.TrustedProxies)
	if err != nil || len(got) != 3 || got[0].String() != "10.0.0.0/8" || got[1].String() != "127.0.0.1/32" || got[2].String() != "::1/128" {
		t.Fatalf("trusted proxies %v: %v %v", c.HTTP.TrustedProxies, got, err)
	}
	if c.HTTP.PublicURL != "https://queues.example.com/" {
		t.Errorf("public url %q", c.HTTP.PublicURL)
	}
	for env, bad := range map[string]string{
		"QMS_HTTP_PUBLIC_URL":      "javascript://x",
		"QMS_HTTP_TRUSTED_PROXIES": "10.0.0.0/8,example.com",
	} {
		if _, err := config.Load("", []string{env + "=" + bad}); err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%s=%s: %v", env, bad, err)
		}
	}
}

func TestRetentionAndFaultSettings(t *testing.T) {
	c, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Retention
	if r.Interval != 15*time.Minute || r.BatchSize != 1000 || r.Events != 24*time.Hour || r.Deliveries != 7*24*time.Hour ||
		r.LineChanges != 24*time.Hour || r.Forwards != 365*24*time.Hour || r.RateLimits != 10*time.Minute || r.TicketLinks != 7*24*time.Hour {
		t.Fatalf("documented retention defaults: %+v", r)
	}
	if c.HTTP.RequestTimeout != 30*time.Second || c.Database.MaxConns != 10 || c.Database.AcquireTimeout != 5*time.Second {
		t.Fatalf("documented fault defaults: request %v, max conns %d, acquire %v", c.HTTP.RequestTimeout, c.Database.MaxConns, c.Database.AcquireTimeout)
	}
	c, err = config.Load("", []string{"QMS_RETENTION_LINE_CHANGES=1h", "QMS_RETENTION_BATCH_SIZE=50", "QMS_DATABASE_MAX_CONNS=40", "QMS_HTTP_REQUEST_TIMEOUT=5s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Retention.LineChanges != time.Hour || c.Retention.BatchSize != 50 || c.Database.MaxConns != 40 || c.HTTP.RequestTimeout != 5*time.Second {
		t.Fatalf("from the environment: %+v %+v %v", c.Retention, c.Database, c.HTTP.RequestTimeout)
	}
	for env, value := range map[string]string{
		"QMS_RETENTION_EVENTS":         "23h", // shorter than the stream's replay window
		"QMS_RETENTION_RATE_LIMITS":    "1m",
		"QMS_RETENTION_BATCH_SIZE":     "0",
		"QMS_RETENTION_INTERVAL":       "0s",
		"QMS_RETENTION_DELIVERIES":     "0s",
		"QMS_RETENTION_TICKET_LINKS":   "0s",
		"QMS_DATABASE_MAX_CONNS":       "0",
		"QMS_DATABASE_ACQUIRE_TIMEOUT": "0s",
		"QMS_HTTP_REQUEST_TIMEOUT":     "0s",
	} {
		if _, err := config.Load("", []string{env + "=" + value}); err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%s=%s: want an error naming it, got %v", env, value, err)
		}
	}
}

// The job runner's and the delivery queue's tuning have documented
// defaults, are set from the environment, and refuse zero.
func TestJobTuning(t *testing.T) {
	c, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Jobs.Workers != 50 || c.Jobs.FetchCooldown != 25*time.Millisecond || c.Jobs.FetchPollInterval != time.Second ||
		c.Jobs.OrphanCheckInterval != 5*time.Second || c.Jobs.OrphanAfter != 10*time.Second ||
		c.Webhooks.Workers != 100 || c.Webhooks.MaxInFlight != 4 {
		t.Fatalf("defaults: jobs %+v, webhooks workers %d, max in flight %d", c.Jobs, c.Webhooks.Workers, c.Webhooks.MaxInFlight)
	}
	c, err = config.Load("", []string{"QMS_JOBS_WORKERS=20", "QMS_JOBS_FETCH_COOLDOWN=10ms", "QMS_JOBS_FETCH_POLL_INTERVAL=500ms",
		"QMS_JOBS_ORPHAN_CHECK_INTERVAL=2s", "QMS_JOBS_ORPHAN_AFTER=30s",
		"QMS_WEBHOOKS_WORKERS=120", "QMS_WEBHOOKS_MAX_IN_FLIGHT=16"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Jobs.Workers != 20 || c.Jobs.FetchCooldown != 10*time.Millisecond || c.Jobs.FetchPollInterval != 500*time.Millisecond ||
		c.Jobs.OrphanCheckInterval != 2*time.Second || c.Jobs.OrphanAfter != 30*time.Second ||
		c.Webhooks.Workers != 120 || c.Webhooks.MaxInFlight != 16 {
		t.Fatalf("from the environment: jobs %+v, webhooks workers %d, max in flight %d", c.Jobs, c.Webhooks.Workers, c.Webhooks.MaxInFlight)
	}
	for _, env := range []string{"QMS_JOBS_WORKERS", "QMS_JOBS_FETCH_COOLDOWN", "QMS_JOBS_FETCH_POLL_INTERVAL",
		"QMS_JOBS_ORPHAN_CHECK_INTERVAL", "QMS_JOBS_ORPHAN_AFTER", "QMS_WEBHOOKS_WORKERS", "QMS_WEBHOOKS_MAX_IN_FLIGHT"} {
		if _, err := config.Load("", []string{env + "=0"}); err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%s=0: %v", env, err)
		}
	}
}
