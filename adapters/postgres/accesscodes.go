package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/platform"
)

type accessCodeRow struct {
	bun.BaseModel  `bun:"table:access_codes"`
	ID             string     `bun:"id,pk"`
	AccountID      string     `bun:"account_id"`
	Code           string     `bun:"code"`
	ScopeType      string     `bun:"scope_type"`
	ScopeEntityID  *string    `bun:"scope_entity_id"`
	ScopeQueueID   *string    `bun:"scope_queue_id"`
	MaxUses        *int       `bun:"max_uses"`
	Uses           int        `bun:"uses"`
	ExpiresAt      *time.Time `bun:"expires_at"`
	Prefix         *string    `bun:"prefix"`
	Classification *string    `bun:"classification"`
	Priority       *string    `bun:"priority"`
	Properties     jsonb      `bun:"properties,type:jsonb"`
	Enabled        bool       `bun:"enabled"`
	DisabledAt     *time.Time `bun:"disabled_at"`
	CreatedAt      time.Time  `bun:"created_at"`
	UpdatedAt      time.Time  `bun:"updated_at"`
}

// AccessCodes is the Postgres accesscodes.Repository.
type AccessCodes struct{ db *DB }

// NewAccessCodes builds the repository.
func NewAccessCodes(db *DB) *AccessCodes { return &AccessCodes{db: db} }

func accessCodeToRow(c accesscodes.AccessCode) (*accessCodeRow, error) {
	props, err := json.Marshal(c.Properties)
	if err != nil {
		return nil, wrap(err, "encode access code properties")
	}
	if c.Properties == nil {
		props = []byte("{}")
	}
	row := &accessCodeRow{ID: c.ID, AccountID: c.AccountID, Code: c.Code, ScopeType: c.ScopeType,
		MaxUses: c.MaxUses, Uses: c.Uses, ExpiresAt: c.ExpiresAt, Prefix: c.Prefix, Classification: c.Classification,
		Priority: c.Priority, Properties: props, Enabled: c.Enabled, DisabledAt: c.DisabledAt,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	switch c.ScopeType {
	case accesscodes.ScopeEntity:
		row.ScopeEntityID = c.ScopeID
	case accesscodes.ScopeQueue:
		row.ScopeQueueID = c.ScopeID
	}
	return row, nil
}

func (row *accessCodeRow) domain() (accesscodes.AccessCode, error) {
	c := accesscodes.AccessCode{ID: row.ID, AccountID: row.AccountID, Code: row.Code, ScopeType: row.ScopeType,
		MaxUses: row.MaxUses, Uses: row.Uses, ExpiresAt: utcPtr(row.ExpiresAt), Prefix: row.Prefix,
		Classification: row.Classification, Priority: row.Priority, Enabled: row.Enabled,
		DisabledAt: utcPtr(row.DisabledAt), CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC()}
	c.ScopeID = row.ScopeEntityID
	if row.ScopeQueueID != nil {
		c.ScopeID = row.ScopeQueueID
	}
	if err := json.Unmarshal(row.Properties, &c.Properties); err != nil {
		return c, wrap(err, "decode access code "+row.ID)
	}
	return c, nil
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}

// Create stores a new code; the unique index turns a concurrent duplicate
// into ACCESS_CODE_DUPLICATE.
func (r *AccessCodes) Create(ctx context.Context, c accesscodes.AccessCode) error {
	return r.CreateMany(ctx, []accesscodes.AccessCode{c})
}

// CreateMany inserts every code in one statement: all or none.
func (r *AccessCodes) CreateMany(ctx context.Context, cs []accesscodes.AccessCode) error {
	if len(cs) == 0 {
		return nil
	}
	rows := make([]*accessCodeRow, len(cs))
	for i, c := range cs {
		row, err := accessCodeToRow(c)
		if err != nil {
			return err
		}
		rows[i] = row
	}
	_, err := r.db.IDB(ctx).NewInsert().Model(&rows).Exec(ctx)
	if isUniqueViolation(err) {
		code := cs[0].Code
		if len(cs) > 1 {
			code = "" // the statement does not say which row collided
		}
		return accesscodes.DuplicateError(code)
	}
	return wrap(err, "insert access codes")
}

func (r *AccessCodes) scanOne(ctx context.Context, q *bun.SelectQuery, what, id string) (accesscodes.AccessCode, error) {
	var row accessCodeRow
	if err := q.Model(&row).Scan(ctx); err != nil {
		return accesscodes.AccessCode{}, notFound(err, what, id)
	}
	return row.domain()
}

// Get returns a code.
func (r *AccessCodes) Get(ctx context.Context, id string) (accesscodes.AccessCode, error) {
	return r.scanOne(ctx, r.db.IDB(ctx).NewSelect().Where("id = ?", id), "access code", id)
}

// GetByCode finds the account's code by value.
func (r *AccessCodes) GetByCode(ctx context.Context, accountID, code string) (accesscodes.AccessCode, error) {
	return r.scanOne(ctx, r.db.IDB(ctx).NewSelect().Where("account_id = ? AND code = ?", accountID, code), "access code", code)
}

// Existing returns those of codes the account already has.
func (r *AccessCodes) Existing(ctx context.Context, accountID string, codes []string) ([]string, error) {
	var out []string
	if len(codes) == 0 {
		return nil, nil
	}
	err := r.db.IDB(ctx).NewSelect().Table("access_codes").Column("code").
		Where("account_id = ? AND code IN (?)", accountID, bun.List(codes)).Scan(ctx, &out)
	return out, wrap(err, "find existing access codes")
}

// Update replaces a code's mutable fields.
func (r *AccessCodes) Update(ctx context.Context, c accesscodes.AccessCode) error {
	row, err := accessCodeToRow(c)
	if err != nil {
		return err
	}
	_, err = r.db.IDB(ctx).NewUpdate().Model(row).
		Column("max_uses", "uses", "expires_at", "prefix", "classification", "priority", "properties",
			"enabled", "disabled_at", "updated_at").
		WherePK().Exec(ctx)
	return wrap(err, "update access code")
}

// List pages the account's codes by id.
func (r *AccessCodes) List(ctx context.Context, accountID string, page platform.PageRequest) ([]accesscodes.AccessCode, error) {
	var rows []accessCodeRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("account_id = ?", accountID).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list access codes")
	}
	out := make([]accesscodes.AccessCode, len(rows))
	for i := range rows {
		c, err := rows[i].domain()
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// Lock locks the code's row (NO KEY UPDATE, the strength of TakeUse's
// UPDATE) until the unit of work ends.
func (r *AccessCodes) Lock(ctx context.Context, id string) error {
	_, err := r.db.IDB(ctx).NewRaw(`SELECT 1 FROM access_codes WHERE id = ? FOR NO KEY UPDATE`, id).Exec(ctx)
	return wrap(err, "lock access code")
}

// TakeUse counts a use with one conditional UPDATE: the check and the
// increment are a single statement, so under READ COMMITTED a taker that
// waited for another's row lock re-checks the condition on the row that
// transaction committed. Of n concurrent takers of a code's last use,
// exactly one updates a row.
func (r *AccessCodes) TakeUse(ctx context.Context, id string, now time.Time) (accesscodes.AccessCode, bool, error) {
	var row accessCodeRow
	err := r.db.IDB(ctx).NewUpdate().Model(&row).
		Set("uses = uses + 1").Set("updated_at = ?", now).
		Where("id = ?", id).
		Where("enabled").
		Where("expires_at IS NULL OR expires_at > ?", now).
		Where("max_uses IS NULL OR uses < max_uses").
		Returning("*").
		Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return accesscodes.AccessCode{}, false, nil
	}
	if err != nil {
		return accesscodes.AccessCode{}, false, wrap(err, "take access code use")
	}
	c, err := row.domain()
	return c, err == nil, err
}
