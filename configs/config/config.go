// Package config loads qms's configuration through koanf: the embedded
// configs/default.yaml, then an optional file, then QMS_* environment
// variables, and checks every value before anything starts.
package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"

	"github.com/qms-dev/qms/configs"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/stream"
)

// Storage modes.
const (
	StorageMemory   = "memory"
	StoragePostgres = "postgres"
)

// Config is the whole configuration of one qms process.
type Config struct {
	HTTP struct {
		Addr           string `koanf:"addr"`
		BodyLimitBytes int    `koanf:"body_limit_bytes"`
		// HeaderLimitBytes bounds the request line and headers together.
		HeaderLimitBytes int           `koanf:"header_limit_bytes"`
		ShutdownTimeout  time.Duration `koanf:"shutdown_timeout"`
		// Timeouts of slow and idle connections (configs/default.yaml
		// says what each bounds).
		ReadHeaderTimeout time.Duration `koanf:"read_header_timeout"`
		ReadTimeout       time.Duration `koanf:"read_timeout"`
		WriteTimeout      time.Duration `koanf:"write_timeout"`
		IdleTimeout       time.Duration `koanf:"idle_timeout"`
		// PublicURL is the base of every URL qms returns; TrustedProxies
		// the CIDRs (or addresses) whose X-Forwarded-For/-Proto count.
		PublicURL      string   `koanf:"public_url"`
		TrustedProxies []string `koanf:"trusted_proxies"`
		// RequestTimeout bounds each request's work (event streams exempt).
		RequestTimeout time.Duration `koanf:"request_timeout"`
		// MaxConnections caps the connections open at once; past it a new
		// one is answered 503 and closed. 0: derived from the process's
		// file limit (RLIMIT_NOFILE), leaving room for the database and
		// the rest.
		MaxConnections int `koanf:"max_connections"`
	} `koanf:"http"`
	Storage  string `koanf:"storage"`
	Database struct {
		URL     string `koanf:"url"`
		Migrate bool   `koanf:"migrate"`
		// MaxConns sizes the pool (unless the URL sets pool_max_conns);
		// AcquireTimeout bounds a unit of work's wait for a connection.
		MaxConns       int           `koanf:"max_conns"`
		AcquireTimeout time.Duration `koanf:"acquire_timeout"`
	} `koanf:"database"`
	Admin struct {
		Token string `koanf:"token"`
		// AuthFailuresPerMinute is how many wrong or missing admin tokens
		// one client address may send per minute (per process) before
		// /admin/v1 answers it 429.
		AuthFailuresPerMinute int `koanf:"auth_failures_per_minute"`
	} `koanf:"admin"`
	RateLimit struct {
		PerMinute int `koanf:"per_minute"`
		// PerTokenPerMinute is the budget of one token-opened keyless
		// route's token (a ticket link, a display board); WaitingRoomPerMinute
		// what one client address may spend on all of them together (never
		// less than PerMinute). See docs/live.md, "Rate limits of the
		// waiting room".
		PerTokenPerMinute    int `koanf:"per_token_per_minute"`
		WaitingRoomPerMinute int `koanf:"waiting_room_per_minute"`
	} `koanf:"ratelimit"`
	Webhooks struct {
		AllowPrivate bool   `koanf:"allow_private"`
		SecretKey    string `koanf:"secret_key"`
		// OldSecretKeys, comma-separated, open secrets sealed under keys
		// used before SecretKey (rotation); nothing new is sealed with them.
		OldSecretKeys string `koanf:"old_secret_keys"`
		// Workers is how many delivery attempts one process makes at
		// once, in a job queue of their own (postgres mode): deliveries do
		// not wait behind other jobs, nor hold them up.
		Workers int `koanf:"workers"`
		// MaxInFlight bounds the requests one process has open to one
		// endpoint; attempts past it are put off (a slow receiver).
		MaxInFlight int `koanf:"max_in_flight"`
	} `koanf:"webhooks"`
	// Jobs tunes the background job runner (River, in postgres mode) for
	// every job but webhook deliveries, and how fast all queues fetch.
	Jobs struct {
		Workers           int           `koanf:"workers"`
		FetchCooldown     time.Duration `koanf:"fetch_cooldown"`
		FetchPollInterval time.Duration `koanf:"fetch_poll_interval"`
		// OrphanCheckInterval and OrphanAfter time the sweep that makes
		// available again the jobs this process fetched and never
		// received (adapters/riverjobs/orphans.go): how often it looks,
		// and how long such a job must have been running first.
		OrphanCheckInterval time.Duration `koanf:"orphan_check_interval"`
		OrphanAfter         time.Duration `koanf:"orphan_after"`
	} `koanf:"jobs"`
	Cursor struct {
		Secret string `koanf:"secret"`
	} `koanf:"cursor"`
	Log struct {
		Level  string `koanf:"level"`
		Format string `koanf:"format"`
	} `koanf:"log"`
	Tickets struct {
		// ExpireAfter is how long a ticket link stays open after its turn
		// finished.
		ExpireAfter time.Duration `koanf:"expire_after"`
	} `koanf:"tickets"`
	// Join is the public join page's abuse budgets (issue 26): joins per
	// client address and per join link, each a minute, apart from every
	// other budget.
	Join struct {
		PerAddressPerMinute int `koanf:"per_address_per_minute"`
		PerLinkPerMinute    int `koanf:"per_link_per_minute"`
	} `koanf:"join"`
	BootstrapDemo bool `koanf:"bootstrap_demo"`
	// Retention says how long each kind of record that would otherwise
	// grow without bound is kept, and how the prune job runs
	// (modules/retention; configs/default.yaml has the defaults).
	Retention struct {
		Interval    time.Duration `koanf:"interval"`
		BatchSize   int           `koanf:"batch_size"`
		Events      time.Duration `koanf:"events"`
		Deliveries  time.Duration `koanf:"deliveries"`
		LineChanges time.Duration `koanf:"line_changes"`
		Forwards    time.Duration `koanf:"forwards"`
		RateLimits  time.Duration `koanf:"rate_limits"`
		// TicketLinks is how long a ticket link is kept after its turn
		// finished; never less than tickets.expire_after (retention
		// keeps it at least that long whatever this says).
		TicketLinks time.Duration `koanf:"ticket_links"`
	} `koanf:"retention"`
	// Notify configures customer notifications (docs/notifications.md):
	// the provider of each channel and the operator's account with it,
	// the defaults of every queue, and how long numbers are kept.
	Notify  Notify `koanf:"notify"`
	Metrics struct {
		// Addr, when set, serves GET /metrics on its own listener (and not
		// on the API's); empty serves it on the API's listener.
		Addr string `koanf:"addr"`
	} `koanf:"metrics"`
	// UnknownEnv lists the QMS_ variables of the environment that name no
	// setting (a typo, or a setting of another version): start-up warns
	// about each, since they are otherwise silently ignored.
	UnknownEnv []string `koanf:"-"`
}

// Notify is the notify section. The provider settings are the operator's:
// one provider account sends for every business of the install.
type Notify struct {
	// SMS is the SMS provider: log (the outbox: logs, sends nothing),
	// twilio, or none. WhatsApp is WhatsApp's: log, twilio, cloud (the
	// WhatsApp Business Cloud API) or none.
	SMS      string `koanf:"sms"`
	WhatsApp string `koanf:"whatsapp"`
	// Region reads numbers typed without a country code (ISO 3166
	// alpha-2; empty: a number must carry its +country code).
	Region string `koanf:"region"`
	// Language, NearFrontAhead, FallbackSMS and Moments are the defaults
	// of queues that set none.
	Language       string `koanf:"language"`
	NearFrontAhead int    `koanf:"near_front_ahead"`
	FallbackSMS    bool   `koanf:"fallback_sms"`
	Moments        string `koanf:"moments"`
	// KeepPhones is how long a message keeps the number it was sent to.
	KeepPhones time.Duration `koanf:"keep_phones"`
	// Workers sends messages in a job queue of their own (postgres mode).
	Workers int `koanf:"workers"`
	// Attempts is how many times a message is tried while the provider
	// answers 429 or 5xx before it is given up.
	Attempts int `koanf:"attempts"`

	TwilioURL                 string `koanf:"twilio_url"`
	TwilioAccountSID          string `koanf:"twilio_account_sid"`
	TwilioAuthToken           string `koanf:"twilio_auth_token"`
	TwilioFrom                string `koanf:"twilio_from"`
	TwilioMessagingServiceSID string `koanf:"twilio_messaging_service_sid"`
	TwilioWhatsAppFrom        string `koanf:"twilio_whatsapp_from"`

	CloudURL           string `koanf:"cloud_url"`
	CloudVersion       string `koanf:"cloud_version"`
	CloudPhoneNumberID string `koanf:"cloud_phone_number_id"`
	CloudToken         string `koanf:"cloud_token"`
	CloudAppSecret     string `koanf:"cloud_app_secret"`
	CloudVerifyToken   string `koanf:"cloud_verify_token"`
}

// validate checks the notify section.
func (n Notify) validate() error {
	switch n.SMS {
	case "log", "twilio", "none":
	default:
		return fmt.Errorf("config: QMS_NOTIFY_SMS (notify.sms) must be log, twilio or none, got %q", n.SMS)
	}
	switch n.WhatsApp {
	case "log", "twilio", "cloud", "none":
	default:
		return fmt.Errorf("config: QMS_NOTIFY_WHATSAPP (notify.whatsapp) must be log, twilio, cloud or none, got %q", n.WhatsApp)
	}
	if (n.SMS == "twilio" || n.WhatsApp == "twilio") && (n.TwilioAccountSID == "" || n.TwilioAuthToken == "") {
		return fmt.Errorf("config: Twilio needs QMS_NOTIFY_TWILIO_ACCOUNT_SID and QMS_NOTIFY_TWILIO_AUTH_TOKEN (notify.twilio_account_sid, notify.twilio_auth_token)")
	}
	if n.SMS == "twilio" && n.TwilioFrom == "" && n.TwilioMessagingServiceSID == "" {
		return fmt.Errorf("config: SMS through Twilio needs QMS_NOTIFY_TWILIO_FROM or QMS_NOTIFY_TWILIO_MESSAGING_SERVICE_SID")
	}
	if n.WhatsApp == "twilio" && n.TwilioWhatsAppFrom == "" {
		return fmt.Errorf("config: WhatsApp through Twilio needs QMS_NOTIFY_TWILIO_WHATSAPP_FROM (notify.twilio_whatsapp_from)")
	}
	if n.WhatsApp == "cloud" && (n.CloudPhoneNumberID == "" || n.CloudToken == "" || n.CloudAppSecret == "") {
		return fmt.Errorf("config: the WhatsApp Cloud API needs QMS_NOTIFY_CLOUD_PHONE_NUMBER_ID, QMS_NOTIFY_CLOUD_TOKEN and QMS_NOTIFY_CLOUD_APP_SECRET")
	}
	if n.KeepPhones <= 0 {
		return fmt.Errorf("config: QMS_NOTIFY_KEEP_PHONES (notify.keep_phones) must be positive, got %s", n.KeepPhones)
	}
	for _, m := range strings.Split(n.Moments, ",") {
		if m = strings.TrimSpace(m); m != "" && !slices.Contains(notify.Moments, m) {
			return fmt.Errorf("config: QMS_NOTIFY_MOMENTS (notify.moments) names %q, not one of %s", m, strings.Join(notify.Moments, ", "))
		}
	}
	if !slices.Contains(notify.Languages, n.Language) {
		return fmt.Errorf("config: QMS_NOTIFY_LANGUAGE (notify.language) must be one of %s, got %q", strings.Join(notify.Languages, ", "), n.Language)
	}
	if n.Attempts < 1 || n.Attempts > 25 {
		return fmt.Errorf("config: QMS_NOTIFY_ATTEMPTS (notify.attempts) must be between 1 and 25, got %d", n.Attempts)
	}
	if n.NearFrontAhead < 0 {
		return fmt.Errorf("config: QMS_NOTIFY_NEAR_FRONT_AHEAD (notify.near_front_ahead) must not be negative")
	}
	return nil
}

// Load reads the defaults, then file (when not empty), then the environment
// (environ, usually os.Environ()), and validates the result. Every error
// names the key at fault.
func Load(file_ string, environ []string) (*Config, error) {
	return LoadWith(file_, environ, nil)
}

// LoadWith is Load with the command line's settings last: each of sets is
// key=value (http.addr=:9000, the flag --set), over the environment.
func LoadWith(file_ string, environ []string, sets []string) (*Config, error) {
	c, err := read(file_, environ, sets...)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadDatabase is Load for commands that only touch the database (qms
// migrate): it checks the storage and database settings alone, so the
// admin token and the server's settings are not required.
func LoadDatabase(file_ string, environ []string) (*Config, error) {
	c, err := read(file_, environ)
	if err != nil {
		return nil, err
	}
	if err := c.validateDatabase(); err != nil {
		return nil, err
	}
	return c, nil
}

func read(file_ string, environ []string, sets ...string) (*Config, error) {
	k, err := defaults()
	if err != nil {
		return nil, err
	}
	known := k.All()
	if file_ != "" {
		if _, err := os.Stat(file_); err != nil {
			return nil, fmt.Errorf("config: --config %s: %w", file_, err)
		}
		if err := k.Load(file.Provider(file_), yaml.Parser()); err != nil {
			return nil, fmt.Errorf("config: file %s: %w", file_, err)
		}
	}
	envProvider := env.Provider(".", env.Opt{
		Prefix:        "QMS_",
		TransformFunc: envKey,
		EnvironFunc:   func() []string { return environ },
	})
	if err := k.Load(envProvider, nil); err != nil {
		return nil, fmt.Errorf("config: environment: %w", err)
	}
	if len(sets) > 0 {
		for _, s := range sets {
			key, value, ok := strings.Cut(s, "=")
			key = strings.TrimSpace(key)
			if _, known := known[key]; !ok || !known {
				return nil, fmt.Errorf("config: --set %q: want key=value with a key of configs/default.yaml, such as http.addr=:9000", s)
			}
			if err := k.Set(key, value); err != nil {
				return nil, fmt.Errorf("config: --set %s: %w", key, err)
			}
		}
	}
	var c Config
	if err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c.UnknownEnv = unknownEnv(environ, known)
	return &c, nil
}

// defaults is the embedded configs/default.yaml, loaded.
func defaults() (*koanf.Koanf, error) {
	k := koanf.New(".")
	if err := k.Load(rawbytes.Provider(configs.Default), yaml.Parser()); err != nil {
		return nil, fmt.Errorf("config: embedded defaults: %w", err)
	}
	return k, nil
}

// Keys lists every setting of configs/default.yaml, as dotted keys
// (http.addr): the settings there are, since every one has a default.
func Keys() []string {
	k, err := defaults()
	if err != nil {
		panic(err) // the embedded file is checked by the tests
	}
	return k.Keys()
}

// EnvName is the environment variable of a dotted key: http.addr is
// QMS_HTTP_ADDR.
func EnvName(key string) string {
	return "QMS_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// notSettings are QMS_ variables read elsewhere than the configuration:
// the admin CLI's, the profiler's and the tests'. They are not unknown.
var notSettings = map[string]bool{
	"QMS_URL": true, "QMS_PPROF_ADDR": true,
}

// unknownEnv lists the QMS_ variables of environ that name no key of
// known, sorted.
func unknownEnv(environ []string, known map[string]any) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "QMS_") || notSettings[name] || strings.HasPrefix(name, "QMS_TEST_") {
			continue
		}
		key, _ := envKey(name, "")
		if _, ok := known[key]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// envKey maps QMS_RATELIMIT_PER_MINUTE to ratelimit.per_minute: the first
// underscore after the prefix separates the section from the key.
func envKey(k, v string) (string, any) {
	k = strings.ToLower(strings.TrimPrefix(k, "QMS_"))
	if section, rest, ok := strings.Cut(k, "_"); ok && knownSections[section] {
		return section + "." + rest, v
	}
	return k, v
}

// knownSections are the sections of configs/default.yaml (its top-level
// maps), read from the file itself: a section added there is known to the
// environment at once (the tickets section once was not, and
// QMS_TICKETS_EXPIRE_AFTER was silently ignored).
var knownSections = func() map[string]bool {
	k, err := defaults()
	if err != nil {
		panic(err)
	}
	out := map[string]bool{}
	for _, key := range k.Keys() {
		if section, _, ok := strings.Cut(key, "."); ok {
			out[section] = true
		}
	}
	return out
}()

// validateDatabase checks the storage mode and the database URL.
func (c *Config) validateDatabase() error {
	switch c.Storage {
	case StorageMemory, StoragePostgres:
	default:
		return fmt.Errorf("config: QMS_STORAGE (storage) must be %q or %q, got %q", StorageMemory, StoragePostgres, c.Storage)
	}
	if c.Database.URL != "" || c.Storage == StoragePostgres {
		if c.Database.URL == "" {
			return fmt.Errorf("config: QMS_DATABASE_URL (database.url) is required when QMS_STORAGE=postgres")
		}
		u, err := url.Parse(c.Database.URL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			return fmt.Errorf("config: QMS_DATABASE_URL (database.url) must be a postgres://user@host:port/db URL")
		}
	}
	return nil
}

// ParseTrustedProxies parses http.trusted_proxies: CIDRs, or single
// addresses.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var items []string // the environment gives one comma-separated string
	for _, s := range list {
		items = append(items, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	for _, s := range items {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("config: QMS_HTTP_TRUSTED_PROXIES (http.trusted_proxies): %q is neither a CIDR nor an address", s)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Validate checks every value and names the environment variable of the
// first one at fault.
func (c *Config) Validate() error {
	if err := c.validateDatabase(); err != nil {
		return err
	}
	if err := c.Notify.validate(); err != nil {
		return err
	}
	if c.HTTP.Addr == "" {
		return fmt.Errorf("config: QMS_HTTP_ADDR (http.addr) must not be empty")
	}
	if c.HTTP.HeaderLimitBytes < 4096 || c.HTTP.HeaderLimitBytes > 1<<20 {
		return fmt.Errorf("config: QMS_HTTP_HEADER_LIMIT_BYTES (http.header_limit_bytes) must be between 4096 and 1048576, got %d", c.HTTP.HeaderLimitBytes)
	}
	if c.HTTP.BodyLimitBytes <= 0 {
		return fmt.Errorf("config: QMS_HTTP_BODY_LIMIT_BYTES (http.body_limit_bytes) must be positive, got %d", c.HTTP.BodyLimitBytes)
	}
	for _, d := range []struct {
		env, key string
		v        time.Duration
	}{
		{"QMS_HTTP_SHUTDOWN_TIMEOUT", "http.shutdown_timeout", c.HTTP.ShutdownTimeout},
		{"QMS_HTTP_READ_HEADER_TIMEOUT", "http.read_header_timeout", c.HTTP.ReadHeaderTimeout},
		{"QMS_HTTP_READ_TIMEOUT", "http.read_timeout", c.HTTP.ReadTimeout},
		{"QMS_HTTP_WRITE_TIMEOUT", "http.write_timeout", c.HTTP.WriteTimeout},
		{"QMS_HTTP_IDLE_TIMEOUT", "http.idle_timeout", c.HTTP.IdleTimeout},
		{"QMS_TICKETS_EXPIRE_AFTER", "tickets.expire_after", c.Tickets.ExpireAfter},
		{"QMS_HTTP_REQUEST_TIMEOUT", "http.request_timeout", c.HTTP.RequestTimeout},
		{"QMS_DATABASE_ACQUIRE_TIMEOUT", "database.acquire_timeout", c.Database.AcquireTimeout},
		{"QMS_RETENTION_INTERVAL", "retention.interval", c.Retention.Interval},
		{"QMS_RETENTION_EVENTS", "retention.events", c.Retention.Events},
		{"QMS_RETENTION_DELIVERIES", "retention.deliveries", c.Retention.Deliveries},
		{"QMS_RETENTION_LINE_CHANGES", "retention.line_changes", c.Retention.LineChanges},
		{"QMS_RETENTION_FORWARDS", "retention.forwards", c.Retention.Forwards},
		{"QMS_RETENTION_RATE_LIMITS", "retention.rate_limits", c.Retention.RateLimits},
		{"QMS_RETENTION_TICKET_LINKS", "retention.ticket_links", c.Retention.TicketLinks},
		{"QMS_JOBS_FETCH_COOLDOWN", "jobs.fetch_cooldown", c.Jobs.FetchCooldown},
		{"QMS_JOBS_FETCH_POLL_INTERVAL", "jobs.fetch_poll_interval", c.Jobs.FetchPollInterval},
		{"QMS_JOBS_ORPHAN_CHECK_INTERVAL", "jobs.orphan_check_interval", c.Jobs.OrphanCheckInterval},
		{"QMS_JOBS_ORPHAN_AFTER", "jobs.orphan_after", c.Jobs.OrphanAfter},
	} {
		if d.v <= 0 {
			return fmt.Errorf("config: %s (%s) must be a positive duration such as 30s, got %v", d.env, d.key, d.v)
		}
	}
	for _, n := range []struct {
		env, key string
		v        int
	}{
		{"QMS_JOBS_WORKERS", "jobs.workers", c.Jobs.Workers},
		{"QMS_WEBHOOKS_WORKERS", "webhooks.workers", c.Webhooks.Workers},
		{"QMS_WEBHOOKS_MAX_IN_FLIGHT", "webhooks.max_in_flight", c.Webhooks.MaxInFlight},
		{"QMS_JOIN_PER_ADDRESS_PER_MINUTE", "join.per_address_per_minute", c.Join.PerAddressPerMinute},
		{"QMS_JOIN_PER_LINK_PER_MINUTE", "join.per_link_per_minute", c.Join.PerLinkPerMinute},
	} {
		if n.v <= 0 {
			return fmt.Errorf("config: %s (%s) must be a positive number, got %d", n.env, n.key, n.v)
		}
	}
	if c.HTTP.PublicURL != "" {
		u, err := url.Parse(c.HTTP.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("config: QMS_HTTP_PUBLIC_URL (http.public_url) must be an http(s)://host[/path] URL, got %q", c.HTTP.PublicURL)
		}
	}
	if _, err := ParseTrustedProxies(c.HTTP.TrustedProxies); err != nil {
		return err
	}
	if c.Database.MaxConns <= 0 || c.Database.MaxConns > 10000 {
		return fmt.Errorf("config: QMS_DATABASE_MAX_CONNS (database.max_conns) must be between 1 and 10000, got %d", c.Database.MaxConns)
	}
	if c.Retention.BatchSize <= 0 {
		return fmt.Errorf("config: QMS_RETENTION_BATCH_SIZE (retention.batch_size) must be a positive integer, got %d", c.Retention.BatchSize)
	}
	// Fewer than the stream's replay window would break its promise: a
	// client reconnecting within the window must be able to resume.
	if c.Retention.Events < stream.DefaultRetention {
		return fmt.Errorf("config: QMS_RETENTION_EVENTS (retention.events) must be at least the event stream's replay window, %v, got %v", stream.DefaultRetention, c.Retention.Events)
	}
	// Windows are a minute long; a shorter keep would delete the current one.
	if c.Retention.RateLimits < 2*time.Minute {
		return fmt.Errorf("config: QMS_RETENTION_RATE_LIMITS (retention.rate_limits) must be at least 2m (windows are a minute long), got %v", c.Retention.RateLimits)
	}
	if c.RateLimit.PerMinute <= 0 {
		return fmt.Errorf("config: QMS_RATELIMIT_PER_MINUTE (ratelimit.per_minute) must be a positive integer, got %d", c.RateLimit.PerMinute)
	}
	if c.RateLimit.PerTokenPerMinute <= 0 {
		return fmt.Errorf("config: QMS_RATELIMIT_PER_TOKEN_PER_MINUTE (ratelimit.per_token_per_minute) must be a positive integer, got %d", c.RateLimit.PerTokenPerMinute)
	}
	if c.RateLimit.WaitingRoomPerMinute <= 0 {
		return fmt.Errorf("config: QMS_RATELIMIT_WAITING_ROOM_PER_MINUTE (ratelimit.waiting_room_per_minute) must be a positive integer, got %d", c.RateLimit.WaitingRoomPerMinute)
	}
	if c.HTTP.MaxConnections < 0 {
		return fmt.Errorf("config: QMS_HTTP_MAX_CONNECTIONS (http.max_connections) must be 0 (from the file limit) or positive, got %d", c.HTTP.MaxConnections)
	}
	if c.Admin.AuthFailuresPerMinute <= 0 {
		return fmt.Errorf("config: QMS_ADMIN_AUTH_FAILURES_PER_MINUTE (admin.auth_failures_per_minute) must be a positive integer, got %d", c.Admin.AuthFailuresPerMinute)
	}
	if c.Storage == StoragePostgres && c.Admin.Token == "" {
		return fmt.Errorf("config: QMS_ADMIN_TOKEN (admin.token) is required when QMS_STORAGE=postgres")
	}
	if c.Admin.Token != "" && len(c.Admin.Token) < 16 {
		return fmt.Errorf("config: QMS_ADMIN_TOKEN (admin.token) must be at least 16 characters")
	}
	if c.Storage == StoragePostgres && c.Webhooks.SecretKey == "" {
		return fmt.Errorf("config: QMS_WEBHOOKS_SECRET_KEY (webhooks.secret_key) is required when QMS_STORAGE=postgres: it seals webhook signing secrets at rest (32+ characters, the same on every process and across restarts)")
	}
	if c.Webhooks.SecretKey != "" && len(c.Webhooks.SecretKey) < 32 {
		return fmt.Errorf("config: QMS_WEBHOOKS_SECRET_KEY (webhooks.secret_key) must be at least 32 characters")
	}
	for _, k := range c.OldSecretKeys() {
		if len(k) < 32 {
			return fmt.Errorf("config: QMS_WEBHOOKS_OLD_SECRET_KEYS (webhooks.old_secret_keys) must list keys of at least 32 characters, comma-separated")
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: QMS_LOG_LEVEL (log.level) must be debug, info, warn or error, got %q", c.Log.Level)
	}
	switch c.Log.Format {
	case "json", "text":
	default:
		return fmt.Errorf("config: QMS_LOG_FORMAT (log.format) must be json or text, got %q", c.Log.Format)
	}
	return nil
}

// OldSecretKeys lists webhooks.old_secret_keys, the keys that sealed secrets
// before webhooks.secret_key: they open, never seal.
func (c *Config) OldSecretKeys() []string {
	var out []string
	for _, k := range strings.Split(c.Webhooks.OldSecretKeys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}
