package postgres

import (
	"github.com/jackc/pgx/v5"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

type accountRow struct {
	bun.BaseModel `bun:"table:accounts"`
	ID            string    `bun:"id,pk"`
	Name          string    `bun:"name"`
	Plan          string    `bun:"plan"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

type apiKeyRow struct {
	bun.BaseModel `bun:"table:api_keys"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	Name          string     `bun:"name"`
	Prefix        string     `bun:"prefix"`
	Hash          string     `bun:"hash"`
	Scopes        []string   `bun:"scopes,array"`
	CreatedAt     time.Time  `bun:"created_at"`
	RevokedAt     *time.Time `bun:"revoked_at"`
}

func (r apiKeyRow) domain() accounts.APIKey {
	scopes := make([]accounts.Scope, len(r.Scopes))
	for i, s := range r.Scopes {
		scopes[i] = accounts.Scope(s)
	}
	return accounts.APIKey{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Prefix: r.Prefix, Hash: r.Hash,
		Scopes: scopes, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt}
}

func keyRow(k accounts.APIKey) *apiKeyRow {
	scopes := make([]string, len(k.Scopes))
	for i, s := range k.Scopes {
		scopes[i] = string(s)
	}
	return &apiKeyRow{ID: k.ID, AccountID: k.AccountID, Name: k.Name, Prefix: k.Prefix, Hash: k.Hash,
		Scopes: scopes, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

// Accounts is the Postgres accounts.Repository.
type Accounts struct{ db *DB }

// NewAccounts builds the repository.
func NewAccounts(db *DB) *Accounts { return &Accounts{db: db} }

// notFound turns sql.ErrNoRows into the domain's 404.
func notFound(err error, resource, id string) error {
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
		return platform.NotFound(resource, id)
	}
	if err != nil {
		return fmt.Errorf("postgres: %s %s: %w", resource, id, err)
	}
	return nil
}

// CreateAccount stores a new account.
func (r *Accounts) CreateAccount(ctx context.Context, a accounts.Account) error {
	row := &accountRow{ID: a.ID, Name: a.Name, Plan: string(a.Plan), CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	_, err := r.db.IDB(ctx).NewInsert().Model(row).Exec(ctx)
	return wrap(err, "insert account")
}

// GetAccount returns an account.
func (r *Accounts) GetAccount(ctx context.Context, id string) (accounts.Account, error) {
	var row accountRow
	err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if err != nil {
		return accounts.Account{}, notFound(err, "account", id)
	}
	return accounts.Account{ID: row.ID, Name: row.Name, Plan: accounts.Plan(row.Plan), CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, nil
}

// UpdateAccount replaces an account.
func (r *Accounts) UpdateAccount(ctx context.Context, a accounts.Account) error {
	row := &accountRow{ID: a.ID, Name: a.Name, Plan: string(a.Plan), CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	_, err := r.db.IDB(ctx).NewUpdate().Model(row).WherePK().Exec(ctx)
	return wrap(err, "update account")
}

// CreateKey stores a new key.
func (r *Accounts) CreateKey(ctx context.Context, k accounts.APIKey) error {
	_, err := r.db.IDB(ctx).NewInsert().Model(keyRow(k)).Exec(ctx)
	return wrap(err, "insert api key")
}

// GetKey returns a key.
func (r *Accounts) GetKey(ctx context.Context, id string) (accounts.APIKey, error) {
	var row apiKeyRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return accounts.APIKey{}, notFound(err, "api key", id)
	}
	return row.domain(), nil
}

// GetKeyByHash finds a key by the hash of its value.
func (r *Accounts) GetKeyByHash(ctx context.Context, hash string) (accounts.APIKey, error) {
	var row apiKeyRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx); err != nil {
		return accounts.APIKey{}, notFound(err, "api key", "")
	}
	return row.domain(), nil
}

// ListKeys lists an account's keys, oldest first.
func (r *Accounts) ListKeys(ctx context.Context, accountID string) ([]accounts.APIKey, error) {
	var rows []apiKeyRow
	if err := r.db.IDB(ctx).NewSelect().Model(&rows).Where("account_id = ?", accountID).Order("id").Scan(ctx); err != nil {
		return nil, wrap(err, "list api keys")
	}
	out := make([]accounts.APIKey, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// UpdateKey replaces a key.
func (r *Accounts) UpdateKey(ctx context.Context, k accounts.APIKey) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(keyRow(k)).WherePK().Exec(ctx)
	return wrap(err, "update api key")
}

func wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}
