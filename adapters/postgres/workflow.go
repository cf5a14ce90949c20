package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/workflow"
)

type linkRow struct {
	bun.BaseModel    `bun:"table:queue_links"`
	ID               string    `bun:"id,pk"`
	AccountID        string    `bun:"account_id"`
	FromQueueID      string    `bun:"from_queue_id"`
	ToQueueID        string    `bun:"to_queue_id"`
	Trigger          string    `bun:"trigger"`
	KeepNumber       bool      `bun:"keep_number"`
	KeepFormResponse bool      `bun:"keep_form_response"`
	Conditions       jsonb     `bun:"conditions,type:jsonb"`
	CreatedAt        time.Time `bun:"created_at"`
	UpdatedAt        time.Time `bun:"updated_at"`
}

// Workflow is the Postgres workflow.Repository and ForwardRepository:
// queue links and the forwards made through them.
type Workflow struct{ db *DB }

// NewWorkflow builds the repository.
func NewWorkflow(db *DB) *Workflow { return &Workflow{db: db} }

func linkToRow(l workflow.Link) (*linkRow, error) {
	cs := l.Conditions
	if cs == nil {
		cs = []workflow.Condition{}
	}
	doc, err := json.Marshal(cs)
	if err != nil {
		return nil, wrap(err, "encode link conditions")
	}
	return &linkRow{ID: l.ID, AccountID: l.AccountID, FromQueueID: l.FromQueueDefinitionID, ToQueueID: l.ToQueueDefinitionID,
		Trigger: l.Trigger, KeepNumber: l.KeepNumber, KeepFormResponse: l.KeepFormResponse, Conditions: doc,
		CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}, nil
}

func (row *linkRow) domain() (workflow.Link, error) {
	l := workflow.Link{ID: row.ID, AccountID: row.AccountID, FromQueueDefinitionID: row.FromQueueID, ToQueueDefinitionID: row.ToQueueID,
		Trigger: row.Trigger, KeepNumber: row.KeepNumber, KeepFormResponse: row.KeepFormResponse,
		CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC()}
	if err := json.Unmarshal(row.Conditions, &l.Conditions); err != nil {
		return l, wrap(err, "decode link "+row.ID)
	}
	if l.Conditions == nil {
		l.Conditions = []workflow.Condition{}
	}
	return l, nil
}

func linkRows(rows []linkRow) ([]workflow.Link, error) {
	out := make([]workflow.Link, len(rows))
	for i := range rows {
		l, err := rows[i].domain()
		if err != nil {
			return nil, err
		}
		out[i] = l
	}
	return out, nil
}

// CreateLink stores a new link.
func (r *Workflow) CreateLink(ctx context.Context, l workflow.Link) error {
	row, err := linkToRow(l)
	if err != nil {
		return err
	}
	_, err = r.db.IDB(ctx).NewInsert().Model(row).Exec(ctx)
	return wrap(err, "insert queue link")
}

// GetLink returns a link.
func (r *Workflow) GetLink(ctx context.Context, id string) (workflow.Link, error) {
	var row linkRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return workflow.Link{}, notFound(err, "queue link", id)
	}
	return row.domain()
}

// UpdateLink replaces a link.
func (r *Workflow) UpdateLink(ctx context.Context, l workflow.Link) error {
	row, err := linkToRow(l)
	if err != nil {
		return err
	}
	_, err = r.db.IDB(ctx).NewUpdate().Model(row).ExcludeColumn("account_id", "created_at").WherePK().Exec(ctx)
	return wrap(err, "update queue link")
}

// DeleteLink removes a link.
func (r *Workflow) DeleteLink(ctx context.Context, id string) error {
	_, err := r.db.IDB(ctx).NewDelete().TableExpr("queue_links").Where("id = ?", id).Exec(ctx)
	return wrap(err, "delete queue link")
}

// ListLinks pages the account's links by id.
func (r *Workflow) ListLinks(ctx context.Context, accountID string, page platform.PageRequest) ([]workflow.Link, error) {
	var rows []linkRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("account_id = ?", accountID).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list queue links")
	}
	return linkRows(rows)
}

// LinksFrom returns the links whose source is the queue, oldest first.
func (r *Workflow) LinksFrom(ctx context.Context, queueID string) ([]workflow.Link, error) {
	var rows []linkRow
	if err := r.db.IDB(ctx).NewSelect().Model(&rows).Where("from_queue_id = ?", queueID).Order("id").Scan(ctx); err != nil {
		return nil, wrap(err, "list links from queue")
	}
	return linkRows(rows)
}

type forwardRow struct {
	bun.BaseModel `bun:"table:queue_forwards"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	LinkID        string     `bun:"link_id"`
	FromTurnID    string     `bun:"from_turn_id"`
	FromQueueID   string     `bun:"from_queue_id"`
	FromRunID     string     `bun:"from_run_id"`
	ToQueueID     string     `bun:"to_queue_id"`
	Trigger       string     `bun:"trigger"`
	Status        string     `bun:"status"`
	ToTurnID      *string    `bun:"to_turn_id"`
	ToRunID       *string    `bun:"to_run_id"`
	NumberKept    bool       `bun:"number_kept"`
	Attempts      int        `bun:"attempts"`
	ErrorCode     *string    `bun:"error_code"`
	ErrorMessage  *string    `bun:"error_message"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
	ForwardedAt   *time.Time `bun:"forwarded_at"`
	FailedAt      *time.Time `bun:"failed_at"`
}

func forwardToRow(f workflow.Forward) *forwardRow {
	return &forwardRow{ID: f.ID, AccountID: f.AccountID, LinkID: f.LinkID, FromTurnID: f.FromTurnID, FromQueueID: f.FromQueueID,
		FromRunID: f.FromRunID, ToQueueID: f.ToQueueID, Trigger: f.Trigger, Status: f.Status, ToTurnID: f.ToTurnID,
		ToRunID: f.ToRunID, NumberKept: f.NumberKept, Attempts: f.Attempts, ErrorCode: f.ErrorCode, ErrorMessage: f.ErrorMessage,
		CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt, ForwardedAt: f.ForwardedAt, FailedAt: f.FailedAt}
}

func (row *forwardRow) domain() workflow.Forward {
	return workflow.Forward{ID: row.ID, AccountID: row.AccountID, LinkID: row.LinkID, FromTurnID: row.FromTurnID,
		FromQueueID: row.FromQueueID, FromRunID: row.FromRunID, ToQueueID: row.ToQueueID, Trigger: row.Trigger,
		Status: row.Status, ToTurnID: row.ToTurnID, ToRunID: row.ToRunID, NumberKept: row.NumberKept, Attempts: row.Attempts,
		ErrorCode: row.ErrorCode, ErrorMessage: row.ErrorMessage, CreatedAt: row.CreatedAt.UTC(),
		UpdatedAt: row.UpdatedAt.UTC(), ForwardedAt: utcPtr(row.ForwardedAt), FailedAt: utcPtr(row.FailedAt)}
}

func forwardRows(rows []forwardRow) []workflow.Forward {
	out := make([]workflow.Forward, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out
}

// CreateForward inserts a forward unless its (turn, link) has one: ON
// CONFLICT DO NOTHING on the unique pair, so concurrent completions (or a
// completion racing a manual forward) store one.
func (r *Workflow) CreateForward(ctx context.Context, f workflow.Forward) (bool, error) {
	res, err := r.db.IDB(ctx).NewInsert().Model(forwardToRow(f)).On("CONFLICT (from_turn_id, link_id) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, wrap(err, "insert forward")
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err, "insert forward")
}

func (r *Workflow) getForward(ctx context.Context, lock bool, where string, args ...any) (workflow.Forward, error) {
	var row forwardRow
	q := r.db.IDB(ctx).NewSelect().Model(&row).Where(where, args...)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return workflow.Forward{}, notFound(err, "forward", fmt.Sprint(args...))
	}
	return row.domain(), nil
}

// GetForward returns a forward.
func (r *Workflow) GetForward(ctx context.Context, id string) (workflow.Forward, error) {
	return r.getForward(ctx, false, "id = ?", id)
}

// GetForwardForUpdate returns a forward and locks it until the unit of
// work ends.
func (r *Workflow) GetForwardForUpdate(ctx context.Context, id string) (workflow.Forward, error) {
	return r.getForward(ctx, true, "id = ?", id)
}

// ForwardOfForUpdate locks and returns the forward of (turn, link).
func (r *Workflow) ForwardOfForUpdate(ctx context.Context, turnID, linkID string) (workflow.Forward, error) {
	return r.getForward(ctx, true, "from_turn_id = ? AND link_id = ?", turnID, linkID)
}

// UpdateForward replaces a forward's changing fields.
func (r *Workflow) UpdateForward(ctx context.Context, f workflow.Forward) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(forwardToRow(f)).
		Column("to_queue_id", "status", "to_turn_id", "to_run_id", "attempts", "error_code", "error_message",
			"updated_at", "forwarded_at", "failed_at").
		WherePK().Exec(ctx)
	return wrap(err, "update forward")
}

// ForwardsOfLink pages a link's forwards by id.
func (r *Workflow) ForwardsOfLink(ctx context.Context, linkID string, page platform.PageRequest) ([]workflow.Forward, error) {
	var rows []forwardRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("link_id = ?", linkID).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list forwards of link")
	}
	return forwardRows(rows), nil
}

// ForwardsOfTurn returns a source turn's forwards by id.
func (r *Workflow) ForwardsOfTurn(ctx context.Context, turnID string) ([]workflow.Forward, error) {
	var rows []forwardRow
	if err := r.db.IDB(ctx).NewSelect().Model(&rows).Where("from_turn_id = ?", turnID).Order("id").Scan(ctx); err != nil {
		return nil, wrap(err, "list forwards of turn")
	}
	return forwardRows(rows), nil
}
