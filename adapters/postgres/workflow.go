package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/workflow"
)

var _ workflow.Repository = (*Workflow)(nil)

type linkRow struct {
	bun.BaseModel    `bun:"table:queue_links"`
	ID               string          `bun:"id,pk"`
	AccountID        string          `bun:"account_id"`
	FromQueueID      string          `bun:"from_queue_id"`
	ToQueueID        string          `bun:"to_queue_id"`
	Trigger          string          `bun:"trigger"`
	KeepNumber       bool            `bun:"keep_number"`
	KeepFormResponse bool            `bun:"keep_form_response"`
	Conditions       json.RawMessage `bun:"conditions,type:jsonb"`
	CreatedAt        time.Time       `bun:"created_at"`
	UpdatedAt        time.Time       `bun:"updated_at"`
}

// Workflow is the Postgres workflow.Repository: queue links.
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
