package postgres

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/ticket"
)

type ticketLinkRow struct {
	bun.BaseModel `bun:"table:ticket_links"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	TurnID        string    `bun:"turn_id"`
	QueueID       string    `bun:"queue_id"`
	RunID         string    `bun:"run_id"`
	Hash          string    `bun:"hash"`
	Language      *string   `bun:"language"`
	CreatedAt     time.Time `bun:"created_at"`
}

// TicketLinks is the Postgres ticket.Repository.
type TicketLinks struct{ db *DB }

// NewTicketLinks builds the repository.
func NewTicketLinks(db *DB) *TicketLinks { return &TicketLinks{db: db} }

// Create stores a new link.
func (r *TicketLinks) Create(ctx context.Context, l ticket.Link) error {
	row := &ticketLinkRow{ID: l.ID, AccountID: l.AccountID, TurnID: l.TurnID, QueueID: l.QueueID, RunID: l.RunID,
		Hash: l.Hash, Language: l.Language, CreatedAt: l.CreatedAt}
	_, err := r.db.IDB(ctx).NewInsert().Model(row).Exec(ctx)
	return wrap(err, "insert ticket link")
}

// GetByHash returns the link whose value hashes to hash.
func (r *TicketLinks) GetByHash(ctx context.Context, hash string) (ticket.Link, error) {
	var row ticketLinkRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx); err != nil {
		return ticket.Link{}, notFound(err, "ticket link", "")
	}
	return ticket.Link{ID: row.ID, AccountID: row.AccountID, TurnID: row.TurnID, QueueID: row.QueueID, RunID: row.RunID,
		Hash: row.Hash, Language: row.Language, CreatedAt: row.CreatedAt.UTC()}, nil
}

// CountByTurn counts a turn's links, and holds the count until the unit
// of work ends: no other link of the turn is made meanwhile.
func (r *TicketLinks) CountByTurn(ctx context.Context, turnID string) (int, error) {
	if err := r.db.holdCount(ctx, "ticket_links", turnID); err != nil {
		return 0, err
	}
	n, err := r.db.IDB(ctx).NewSelect().Model((*ticketLinkRow)(nil)).Where("turn_id = ?", turnID).Count(ctx)
	return int(n), wrap(err, "count ticket links")
}
