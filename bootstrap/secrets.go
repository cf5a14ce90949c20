package bootstrap

import (
	"context"
	"fmt"
	"log/slog"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/configs/config"
)

// newWebhooksRepo is the Postgres webhooks repository, sealing signing
// secrets under webhooks.secret_key (required in postgres mode) and opening
// those sealed under webhooks.old_secret_keys.
func newWebhooksRepo(db *postgres.DB, cfg *config.Config) (*postgres.Webhooks, error) {
	return postgres.NewWebhooks(db, cfg.Webhooks.SecretKey, cfg.OldSecretKeys()...)
}

// sealPlainSecrets seals, at start-up (after the migrations), the signing
// secrets an earlier version stored in clear (`plain:`). Secrets sealed under
// an older key are left to `qms reseal-secrets`.
func sealPlainSecrets(lc fx.Lifecycle, r adapterset.Resealer, log *slog.Logger) {
	if r == nil {
		return // memory: nothing stored
	}
	lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		n, err := r.ResealSecrets(ctx, false)
		if n > 0 {
			log.Info("webhook signing secrets sealed", "count", n)
		}
		if err != nil {
			// An unopenable secret fails only its own deliveries; do not
			// refuse to start over it, but say so.
			log.Warn("webhook signing secrets", "error", err)
		}
		return nil
	}})
}

// ResealSecrets is `qms reseal-secrets`: every stored signing secret sealed
// under the current key, whatever opened it.
func ResealSecrets(ctx context.Context, cfg *config.Config) (int, error) {
	if cfg.Storage != config.StoragePostgres {
		return 0, fmt.Errorf("reseal-secrets needs QMS_STORAGE=postgres: memory mode stores nothing")
	}
	db, err := postgres.Open(ctx, cfg.Database.URL)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	r, err := newWebhooksRepo(db, cfg)
	if err != nil {
		return 0, err
	}
	return r.ResealSecrets(ctx, true)
}
