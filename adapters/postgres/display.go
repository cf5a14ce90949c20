package postgres

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
)

type displayTokenRow struct {
	bun.BaseModel `bun:"table:display_tokens"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	QueueID       string     `bun:"queue_id"`
	RunID         string     `bun:"run_id"`
	Label         *string    `bun:"label"`
	Hash          string     `bun:"hash"`
	CreatedAt     time.Time  `bun:"created_at"`
	RevokedAt     *time.Time `bun:"revoked_at"`
	NextUp        int        `bun:"next_up"`
	Speech        bool       `bun:"speech"`
	Language      *string    `bun:"language"`
}

func (row displayTokenRow) domain() display.Token {
	return display.Token{ID: row.ID, AccountID: row.AccountID, QueueID: row.QueueID, RunID: row.RunID,
		Label: row.Label, Hash: row.Hash, CreatedAt: row.CreatedAt.UTC(), RevokedAt: utcPtr(row.RevokedAt),
		Options: display.Options{NextUp: row.NextUp, Speech: row.Speech, Language: row.Language}}
}

// DisplayTokens is the Postgres display.Repository.
type DisplayTokens struct{ db *DB }

// NewDisplayTokens builds the repository.
func NewDisplayTokens(db *DB) *DisplayTokens { return &DisplayTokens{db: db} }

func displayTokenToRow(t display.Token) *displayTokenRow {
	return &displayTokenRow{ID: t.ID, AccountID: t.AccountID, QueueID: t.QueueID, RunID: t.RunID,
		Label: t.Label, Hash: t.Hash, CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt,
		NextUp: t.NextUp, Speech: t.Speech, Language: t.Language}
}

// Create stores a new token.
func (r *DisplayTokens) Create(ctx context.Context, t display.Token) error {
	_, err := r.db.IDB(ctx).NewInsert().Model(displayTokenToRow(t)).Exec(ctx)
	return wrap(err, "insert display token")
}

// Get returns a token by id.
func (r *DisplayTokens) Get(ctx context.Context, id string) (display.Token, error) {
	var row displayTokenRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return display.Token{}, notFound(err, "display token", id)
	}
	return row.domain(), nil
}

// GetByHash returns the token whose value hashes to hash.
func (r *DisplayTokens) GetByHash(ctx context.Context, hash string) (display.Token, error) {
	var row displayTokenRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx); err != nil {
		return display.Token{}, notFound(err, "display token", "")
	}
	return row.domain(), nil
}

// Update stores every field of a token.
func (r *DisplayTokens) Update(ctx context.Context, t display.Token) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(displayTokenToRow(t)).WherePK().Exec(ctx)
	return wrap(err, "update display token")
}

// ListByRun pages a run's tokens by id.
func (r *DisplayTokens) ListByRun(ctx context.Context, runID string, page platform.PageRequest) ([]display.Token, error) {
	var rows []displayTokenRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("run_id = ?", runID).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list display tokens")
	}
	out := make([]display.Token, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// CountLive counts the run's unrevoked tokens, and holds the count until
// the unit of work ends: no other token of the run is made meanwhile.
func (r *DisplayTokens) CountLive(ctx context.Context, runID string) (int, error) {
	if err := r.db.holdCount(ctx, "display_tokens", runID); err != nil {
		return 0, err
	}
	n, err := r.db.IDB(ctx).NewSelect().Model((*displayTokenRow)(nil)).Where("run_id = ? AND revoked_at IS NULL", runID).Count(ctx)
	return int(n), wrap(err, "count display tokens")
}
