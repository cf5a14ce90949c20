package postgres

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/platform"
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

type helpRequestRow struct {
	bun.BaseModel `bun:"table:help_requests"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	TurnID        string     `bun:"turn_id"`
	QueueID       string     `bun:"queue_id"`
	RunID         string     `bun:"run_id"`
	DisplayCode   string     `bun:"display_code"`
	Status        string     `bun:"status"`
	Reply         *string    `bun:"reply"`
	RequestedAt   time.Time  `bun:"requested_at"`
	AnsweredAt    *time.Time `bun:"answered_at"`
}

func helpToRow(h ticket.HelpRequest) *helpRequestRow {
	return &helpRequestRow{ID: h.ID, AccountID: h.AccountID, TurnID: h.TurnID, QueueID: h.QueueID, RunID: h.RunID,
		DisplayCode: h.DisplayCode, Status: h.Status, Reply: h.Reply, RequestedAt: h.RequestedAt, AnsweredAt: h.AnsweredAt}
}

func (row helpRequestRow) domain() ticket.HelpRequest {
	return ticket.HelpRequest{ID: row.ID, AccountID: row.AccountID, TurnID: row.TurnID, QueueID: row.QueueID, RunID: row.RunID,
		DisplayCode: row.DisplayCode, Status: row.Status, Reply: row.Reply, RequestedAt: row.RequestedAt.UTC(),
		AnsweredAt: utcPtr(row.AnsweredAt)}
}

// CreateHelp stores a help request unless its turn has an OPEN one (the
// partial unique index decides, so two at once make one).
func (r *TicketLinks) CreateHelp(ctx context.Context, h ticket.HelpRequest) (bool, error) {
	res, err := r.db.IDB(ctx).NewInsert().Model(helpToRow(h)).
		On("CONFLICT (turn_id) WHERE status = 'OPEN' DO NOTHING").Exec(ctx)
	if err != nil {
		return false, wrap(err, "insert help request")
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err, "insert help request")
}

func (r *TicketLinks) getHelp(ctx context.Context, id string, lock bool) (ticket.HelpRequest, error) {
	var row helpRequestRow
	q := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return ticket.HelpRequest{}, notFound(err, "help request", id)
	}
	return row.domain(), nil
}

// GetHelp returns a help request.
func (r *TicketLinks) GetHelp(ctx context.Context, id string) (ticket.HelpRequest, error) {
	return r.getHelp(ctx, id, false)
}

// GetHelpForUpdate returns a help request locked until the unit of work
// ends.
func (r *TicketLinks) GetHelpForUpdate(ctx context.Context, id string) (ticket.HelpRequest, error) {
	return r.getHelp(ctx, id, true)
}

// UpdateHelp stores a changed help request.
func (r *TicketLinks) UpdateHelp(ctx context.Context, h ticket.HelpRequest) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(helpToRow(h)).WherePK().Exec(ctx)
	return wrap(err, "update help request")
}

// CountHelpOfTurn counts a turn's help requests.
func (r *TicketLinks) CountHelpOfTurn(ctx context.Context, turnID string) (int, error) {
	n, err := r.db.IDB(ctx).NewSelect().Model((*helpRequestRow)(nil)).Where("turn_id = ?", turnID).Count(ctx)
	return int(n), wrap(err, "count help requests")
}

// HelpOfTurn returns a turn's help requests by id.
func (r *TicketLinks) HelpOfTurn(ctx context.Context, turnID string) ([]ticket.HelpRequest, error) {
	var rows []helpRequestRow
	if err := r.db.IDB(ctx).NewSelect().Model(&rows).Where("turn_id = ?", turnID).Order("id").Scan(ctx); err != nil {
		return nil, wrap(err, "list a turn's help requests")
	}
	out := make([]ticket.HelpRequest, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// ListHelp pages through a run's help requests by id.
func (r *TicketLinks) ListHelp(ctx context.Context, runID, status string, page platform.PageRequest) ([]ticket.HelpRequest, error) {
	var rows []helpRequestRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("run_id = ?", runID).Where("id > ?", page.After)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	if err := q.Order("id").Limit(int64(page.Limit + 1)).Scan(ctx); err != nil {
		return nil, wrap(err, "list a run's help requests")
	}
	out := make([]ticket.HelpRequest, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}
