package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qms-dev/qms/bootstrap/config"
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
