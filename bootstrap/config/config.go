// Package config loads qms's configuration through koanf: the embedded
// configs/default.yaml, then an optional file, then QMS_* environment
// variables, and checks every value before anything starts.
package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"

	"github.com/qms-dev/qms/configs"
)

// Storage modes.
const (
	StorageMemory   = "memory"
	StoragePostgres = "postgres"
)

// Config is the whole configuration of one qms process.
type Config struct {
	HTTP struct {
		Addr            string        `koanf:"addr"`
		BodyLimitBytes  int           `koanf:"body_limit_bytes"`
		ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	} `koanf:"http"`
	Storage  string `koanf:"storage"`
	Database struct {
		URL     string `koanf:"url"`
		Migrate bool   `koanf:"migrate"`
	} `koanf:"database"`
	Admin struct {
		Token string `koanf:"token"`
	} `koanf:"admin"`
	RateLimit struct {
		PerMinute int `koanf:"per_minute"`
	} `koanf:"ratelimit"`
	Webhooks struct {
		AllowPrivate bool   `koanf:"allow_private"`
		SecretKey    string `koanf:"secret_key"`
		// OldSecretKeys, comma-separated, open secrets sealed under keys
		// used before SecretKey (rotation); nothing new is sealed with them.
		OldSecretKeys string `koanf:"old_secret_keys"`
	} `koanf:"webhooks"`
	Cursor struct {
		Secret string `koanf:"secret"`
	} `koanf:"cursor"`
	Log struct {
		Level  string `koanf:"level"`
		Format string `koanf:"format"`
	} `koanf:"log"`
	BootstrapDemo bool `koanf:"bootstrap_demo"`
	Metrics       struct {
		// Addr, when set, serves GET /metrics on its own listener (and not
		// on the API's); empty serves it on the API's listener.
		Addr string `koanf:"addr"`
	} `koanf:"metrics"`
}

// Load reads the defaults, then file (when not empty), then the environment
// (environ, usually os.Environ()), and validates the result. Every error
// names the key at fault.
func Load(file_ string, environ []string) (*Config, error) {
	k := koanf.New(".")
	if err := k.Load(rawbytes.Provider(configs.Default), yaml.Parser()); err != nil {
		return nil, fmt.Errorf("config: embedded defaults: %w", err)
	}
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
	var c Config
	if err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
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

var knownSections = map[string]bool{
	"http": true, "database": true, "admin": true, "ratelimit": true,
	"webhooks": true, "cursor": true, "log": true, "metrics": true,
}

// Validate checks every value and names the environment variable of the
// first one at fault.
func (c *Config) Validate() error {
	switch c.Storage {
	case StorageMemory, StoragePostgres:
	default:
		return fmt.Errorf("config: QMS_STORAGE (storage) must be %q or %q, got %q", StorageMemory, StoragePostgres, c.Storage)
	}
	if c.HTTP.Addr == "" {
		return fmt.Errorf("config: QMS_HTTP_ADDR (http.addr) must not be empty")
	}
	if c.HTTP.BodyLimitBytes <= 0 {
		return fmt.Errorf("config: QMS_HTTP_BODY_LIMIT_BYTES (http.body_limit_bytes) must be positive, got %d", c.HTTP.BodyLimitBytes)
	}
	if c.RateLimit.PerMinute <= 0 {
		return fmt.Errorf("config: QMS_RATELIMIT_PER_MINUTE (ratelimit.per_minute) must be a positive integer, got %d", c.RateLimit.PerMinute)
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
