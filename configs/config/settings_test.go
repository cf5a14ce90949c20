package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
)

// base makes every sample valid together: postgres mode (a sample of
// storage) needs a database URL, an admin token and a secret key. It is
// given in the file, the lowest of the three sources, so each source
// under test overrides it.
var base = map[string]string{
	"database.url":        "postgres://qms@db:5432/qms",
	"admin.token":         "0123456789abcdef-base",
	"webhooks.secret_key": strings.Repeat("b", 32),
}

// stringSamples are valid values, different from the defaults, of the
// string settings (their valid values depend on the setting). A string
// setting added to configs/default.yaml without a sample here fails the
// test: add one.
var stringSamples = map[string]string{
	"http.addr":                "127.0.0.1:9123",
	"http.public_url":          "https://queues.example.com",
	"storage":                  "postgres",
	"database.url":             "postgres://sample@db2:5432/qms2",
	"admin.token":              "0123456789abcdef-sample",
	"webhooks.secret_key":      strings.Repeat("s", 32),
	"webhooks.old_secret_keys": strings.Repeat("o", 32),
	"cursor.secret":            "a-cursor-secret",
	"log.level":                "debug",
	"log.format":               "text",
	"metrics.addr":             "127.0.0.1:9124",
	// Each alone must load: "none" needs no provider account.
	"notify.sms":                          "none",
	"notify.whatsapp":                     "none",
	"notify.region":                       "ES",
	"notify.language":                     "es",
	"notify.moments":                      "joined,called",
	"notify.twilio_url":                   "https://twilio.proxy.example",
	"notify.twilio_account_sid":           "AC0123",
	"notify.twilio_auth_token":            "token-sample",
	"notify.twilio_from":                  "+15005550006",
	"notify.twilio_messaging_service_sid": "MG0123",
	"notify.twilio_whatsapp_from":         "+14155238886",
	"notify.cloud_url":                    "https://graph.proxy.example",
	"notify.cloud_version":                "v22.0",
	"notify.cloud_phone_number_id":        "1065",
	"notify.cloud_token":                  "cloud-token-sample",
	"notify.cloud_app_secret":             "app-secret-sample",
	"notify.cloud_verify_token":           "verify-sample",
}

// sample is a valid value of key, different from its default, as text
// (what the environment and --set give) and as YAML, and the value the
// loaded configuration must then hold.
func sample(t *testing.T, key string, field reflect.Value) (text, yaml string, want any) {
	t.Helper()
	switch v := field.Interface().(type) {
	case time.Duration:
		d := 2 * v
		return d.String(), strconv.Quote(d.String()), d
	case int:
		return strconv.Itoa(v + 1), strconv.Itoa(v + 1), v + 1
	case bool:
		return strconv.FormatBool(!v), strconv.FormatBool(!v), !v
	case string:
		s, ok := stringSamples[key]
		if !ok {
			t.Fatalf("no sample for the string setting %s: add one to stringSamples", key)
		}
		return s, strconv.Quote(s), s
	case []string:
		return "10.1.0.0/16", `["10.1.0.0/16"]`, []string{"10.1.0.0/16"}
	}
	t.Fatalf("setting %s has a type (%s) this test cannot sample: teach it", key, field.Type())
	return "", "", nil
}

// field is the Config field of a dotted key, found through the koanf tags.
func field(t *testing.T, c *config.Config, key string) reflect.Value {
	t.Helper()
	v := reflect.ValueOf(c).Elem()
next:
	for _, part := range strings.Split(key, ".") {
		for i := range v.NumField() {
			if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("koanf"), ","); tag == part {
				v = v.Field(i)
				continue next
			}
		}
		t.Fatalf("configs/default.yaml has %s, the Config struct has no field for it (tag %q)", key, part)
	}
	return v
}

// writeYAML writes the settings (dotted key: YAML value) as a file.
func writeYAML(t *testing.T, settings map[string]string) string {
	t.Helper()
	sections := map[string][]string{}
	var top []string
	for key, value := range settings {
		if section, rest, ok := strings.Cut(key, "."); ok {
			sections[section] = append(sections[section], fmt.Sprintf("  %s: %s", rest, value))
		} else {
			top = append(top, fmt.Sprintf("%s: %s", key, value))
		}
	}
	var b strings.Builder
	for _, line := range top {
		b.WriteString(line + "\n")
	}
	for section, lines := range sections {
		b.WriteString(section + ":\n" + strings.Join(lines, "\n") + "\n")
	}
	file := filepath.Join(t.TempDir(), "qms.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestEverySettingReachesTheConfigFromEverySource derives the settings
// from configs/default.yaml (every setting has its default there) and,
// for each, loads a valid value different from the default through a
// config file, the environment (QMS_SECTION_KEY) and a --set flag, and
// checks the loaded configuration holds it. QMS_TICKETS_EXPIRE_AFTER was
// once silently ignored: the environment did not know the tickets section.
func TestEverySettingReachesTheConfigFromEverySource(t *testing.T) {
	defaults, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := config.Keys()
	if len(keys) < 40 {
		t.Fatalf("only %d settings read from configs/default.yaml: %v", len(keys), keys)
	}
	baseYAML := map[string]string{}
	for k, v := range base {
		baseYAML[k] = strconv.Quote(v)
	}
	for _, key := range keys {
		text, yaml, want := sample(t, key, field(t, defaults, key))
		sources := map[string]func() (*config.Config, error){
			"file": func() (*config.Config, error) {
				settings := maps(baseYAML)
				settings[key] = yaml
				return config.Load(writeYAML(t, settings), nil)
			},
			"environment " + config.EnvName(key): func() (*config.Config, error) {
				return config.Load(writeYAML(t, baseYAML), []string{config.EnvName(key) + "=" + text})
			},
			"--set": func() (*config.Config, error) {
				return config.LoadWith(writeYAML(t, baseYAML), nil, []string{key + "=" + text})
			},
		}
		for source, load := range sources {
			c, err := load()
			if err != nil {
				t.Errorf("%s = %s through the %s: %v", key, text, source, err)
				continue
			}
			if got := field(t, c, key).Interface(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s = %s through the %s: the configuration holds %v", key, text, source, got)
			}
			if len(c.UnknownEnv) != 0 {
				t.Errorf("%s through the %s: reported unknown %v", key, source, c.UnknownEnv)
			}
		}
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// notSettings are the QMS_ variables the documents name that are not
// settings of the service: the admin CLI's, the profiler's, and the
// tests' and tools'.
var notSettings = []string{
	"QMS_URL", "QMS_PPROF_ADDR", "QMS_API_KEY", "QMS_WEBHOOK_SECRET",
	"QMS_CHROMIUM", "QMS_ARTIFACTS_DIR", "QMS_TEST_PG_BIN", "QMS_TEST_DATABASE_URL",
	"QMS_WEBHOOK_BENCH_WORKERS", "QMS_WEBHOOK_BENCH_MAX_CONNS", "QMS_WEBHOOK_BENCH_MAX_IN_FLIGHT", "QMS_WEBHOOK_P99", "QMS_WEBHOOK_RATE", "QMS_WEBHOOK_DURATION",
}

// TestDocumentedVariablesAreSettings reads every QMS_ variable the README,
// the docs and configs/default.yaml name, and checks each is a setting
// (so the test above covers it) or one of the few that are not.
func TestDocumentedVariablesAreSettings(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md", "../default.yaml")
	settings := map[string]bool{}
	for _, k := range config.Keys() {
		settings[config.EnvName(k)] = true
	}
	name := regexp.MustCompile(`QMS_[A-Z0-9_]*[A-Z0-9]\b\*?`)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range name.FindAllString(string(b), -1) {
			if strings.HasSuffix(v, "*") {
				continue // a family (QMS_HTTP_*_TIMEOUT), not a name
			}
			seen++
			if !settings[v] && !slices.Contains(notSettings, v) {
				t.Errorf("%s names %s, which is no setting of configs/default.yaml (nor a known tool variable)", f, v)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("only %d QMS_ variables found in the documents", seen)
	}
}

// TestUnknownVariablesAreReported: a QMS_ variable that names no setting
// is listed for start-up to warn about; settings, the CLI's own and the
// tests' are not.
func TestUnknownVariablesAreReported(t *testing.T) {
	c, err := config.Load("", []string{"QMS_TICKET_EXPIRE_AFTER=3s", "QMS_TICKETS_EXPIRE_AFTER=3s", "QMS_RATELIMIT_PERMINUTE=5",
		"QMS_URL=http://x", "QMS_TEST_DATABASE_URL=postgres://x", "QMS_BOOTSTRAP_DEMO=false", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"QMS_RATELIMIT_PERMINUTE", "QMS_TICKET_EXPIRE_AFTER"}; !slices.Equal(c.UnknownEnv, want) {
		t.Fatalf("unknown %v, want %v", c.UnknownEnv, want)
	}
	if c.Tickets.ExpireAfter != 3*time.Second || c.BootstrapDemo {
		t.Fatalf("known settings: tickets.expire_after %v, bootstrap_demo %v", c.Tickets.ExpireAfter, c.BootstrapDemo)
	}
	if _, err := config.LoadWith("", nil, []string{"tickets.expire=3s"}); err == nil || !strings.Contains(err.Error(), "tickets.expire") {
		t.Fatalf("--set of no setting: %v", err)
	}
	if _, err := config.LoadWith("", nil, []string{"noequals"}); err == nil {
		t.Fatal("--set without = was accepted")
	}
}
