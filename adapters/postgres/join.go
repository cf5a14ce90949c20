package postgres

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/join"
	"github.com/qms-dev/qms/core/platform"
)

type joinLinkRow struct {
	bun.BaseModel `bun:"table:join_links"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	QueueID       string     `bun:"queue_id"`
	Label         *string    `bun:"label"`
	Hash          string     `bun:"hash"`
	Language      *string    `bun:"language"`
	Kiosk         bool       `bun:"kiosk"`
	PhoneRegion   *string    `bun:"phone_region"`
	CreatedAt     time.Time  `bun:"created_at"`
	RevokedAt     *time.Time `bun:"revoked_at"`
}

func (row joinLinkRow) domain() join.Link {
	return join.Link{ID: row.ID, AccountID: row.AccountID, QueueID: row.QueueID, Label: row.Label, Hash: row.Hash,
		Language: row.Language, Kiosk: row.Kiosk, PhoneRegion: row.PhoneRegion,
		CreatedAt: row.CreatedAt.UTC(), RevokedAt: utcPtr(row.RevokedAt)}
}

func joinLinkToRow(l join.Link) *joinLinkRow {
	return &joinLinkRow{ID: l.ID, AccountID: l.AccountID, QueueID: l.QueueID, Label: l.Label, Hash: l.Hash,
		Language: l.Language, Kiosk: l.Kiosk, PhoneRegion: l.PhoneRegion, CreatedAt: l.CreatedAt, RevokedAt: l.RevokedAt}
}

// JoinLinks is the Postgres join.Repository.
type JoinLinks struct{ db *DB }

// NewJoinLinks builds the repository.
func NewJoinLinks(db *DB) *JoinLinks { return &JoinLinks{db: db} }

// Create stores a new link.
func (r *JoinLinks) Create(ctx context.Context, l join.Link) error {
	_, err := r.db.IDB(ctx).NewInsert().Model(joinLinkToRow(l)).Exec(ctx)
	return wrap(err, "insert join link")
}

// Get returns a link by id.
func (r *JoinLinks) Get(ctx context.Context, id string) (join.Link, error) {
	var row joinLinkRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return join.Link{}, notFound(err, "join link", id)
	}
	return row.domain(), nil
}

// GetByHash returns the link whose value hashes to hash.
func (r *JoinLinks) GetByHash(ctx context.Context, hash string) (join.Link, error) {
	var row joinLinkRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx); err != nil {
		return join.Link{}, notFound(err, "join link", "")
	}
	return row.domain(), nil
}

// Update stores every field of a link.
func (r *JoinLinks) Update(ctx context.Context, l join.Link) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(joinLinkToRow(l)).WherePK().Exec(ctx)
	return wrap(err, "update join link")
}

// ListByQueue pages a queue's links by id.
func (r *JoinLinks) ListByQueue(ctx context.Context, queueID string, page platform.PageRequest) ([]join.Link, error) {
	var rows []joinLinkRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("queue_id = ?", queueID).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list join links")
	}
	out := make([]join.Link, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// CountLive counts the queue's unrevoked links, and holds the count until
// the unit of work ends: no other link of the queue is made meanwhile.
func (r *JoinLinks) CountLive(ctx context.Context, queueID string) (int, error) {
	if err := r.db.holdCount(ctx, "join_links", queueID); err != nil {
		return 0, err
	}
	n, err := r.db.IDB(ctx).NewSelect().Model((*joinLinkRow)(nil)).Where("queue_id = ? AND revoked_at IS NULL", queueID).Count(ctx)
	return int(n), wrap(err, "count join links")
}
