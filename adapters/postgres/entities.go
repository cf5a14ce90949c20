package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
)

type entityRow struct {
	bun.BaseModel `bun:"table:entities"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	Doc           jsonb     `bun:"doc,type:jsonb"`
	CreatedAt     time.Time `bun:"created_at"`
}

// Entities is the Postgres entities.Repository.
type Entities struct{ db *DB }

// NewEntities builds the repository.
func NewEntities(db *DB) *Entities { return &Entities{db: db} }

func entityToRow(e entities.Entity) (*entityRow, error) {
	doc, err := json.Marshal(e)
	if err != nil {
		return nil, wrap(err, "encode entity")
	}
	return &entityRow{ID: e.ID, AccountID: e.AccountID, Doc: doc, CreatedAt: e.CreatedAt}, nil
}

func (row entityRow) domain() (entities.Entity, error) {
	var e entities.Entity
	if err := json.Unmarshal(row.Doc, &e); err != nil {
		return e, wrap(err, "decode entity "+row.ID)
	}
	e.AccountID = row.AccountID
	return e, nil
}

// Create stores a new entity.
func (r *Entities) Create(ctx context.Context, e entities.Entity) error {
	row, err := entityToRow(e)
	if err != nil {
		return err
	}
	_, err = r.db.IDB(ctx).NewInsert().Model(row).Exec(ctx)
	return wrap(err, "insert entity")
}

// Get returns an entity.
func (r *Entities) Get(ctx context.Context, id string) (entities.Entity, error) {
	var row entityRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return entities.Entity{}, notFound(err, "entity", id)
	}
	return row.domain()
}

// Update replaces an entity.
func (r *Entities) Update(ctx context.Context, e entities.Entity) error {
	row, err := entityToRow(e)
	if err != nil {
		return err
	}
	_, err = r.db.IDB(ctx).NewUpdate().Model(row).Column("doc").WherePK().Exec(ctx)
	return wrap(err, "update entity")
}

// Delete removes an entity; the foreign keys cascade to its queues and
// everything under them in the same statement.
func (r *Entities) Delete(ctx context.Context, id string) error {
	_, err := r.db.IDB(ctx).NewDelete().TableExpr("entities").Where("id = ?", id).Exec(ctx)
	return wrap(err, "delete entity")
}

// List pages the account's entities by id.
func (r *Entities) List(ctx context.Context, accountID string, page platform.PageRequest) ([]entities.Entity, error) {
	var rows []entityRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("account_id = ?", accountID).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list entities")
	}
	out := make([]entities.Entity, 0, len(rows))
	for _, row := range rows {
		e, err := row.domain()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
