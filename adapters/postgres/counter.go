package postgres

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/platform"
)

type counterLinkRow struct {
	bun.BaseModel `bun:"table:counter_links"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	QueueID       string     `bun:"queue_id"`
	Label         *string    `bun:"label"`
	Hash          string     `bun:"hash"`
	Language      *string    `bun:"language"`
	StationIDs    []string   `bun:"station_ids,array"`
	ShowDetails   bool       `bun:"show_details"`
	CreatedAt     time.Time  `bun:"created_at"`
	RevokedAt     *time.Time `bun:"revoked_at"`
}

func (row counterLinkRow) domain() counter.Link {
	ids := row.StationIDs
	if ids == nil {
		ids = []string{}
	}
	return counter.Link{ID: row.ID, AccountID: row.AccountID, QueueID: row.QueueID, Label: row.Label, Hash: row.Hash,
		CreatedAt: row.CreatedAt.UTC(), RevokedAt: utcPtr(row.RevokedAt),
		Options: counter.Options{Language: row.Language, StationIDs: ids, ShowDetails: row.ShowDetails}}
}

func counterLinkToRow(l counter.Link) *counterLinkRow {
	ids := l.StationIDs
	if ids == nil {
		ids = []string{}
	}
	return &counterLinkRow{ID: l.ID, AccountID: l.AccountID, QueueID: l.QueueID, Label: l.Label, Hash: l.Hash,
		Language: l.Language, StationIDs: ids, ShowDetails: l.ShowDetails, CreatedAt: l.CreatedAt, RevokedAt: l.RevokedAt}
}

type counterPressRow struct {
	bun.BaseModel `bun:"table:counter_presses"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	LinkID        string    `bun:"link_id"`
	QueueID       string    `bun:"queue_id"`
	Key           string    `bun:"key"`
	Action        string    `bun:"action"`
	StationID     *string   `bun:"station_id"`
	TurnID        *string   `bun:"turn_id"`
	RequestHash   string    `bun:"request_hash"`
	At            time.Time `bun:"at"`
}

func (row counterPressRow) domain() counter.Press {
	return counter.Press{ID: row.ID, AccountID: row.AccountID, LinkID: row.LinkID, QueueID: row.QueueID, Key: row.Key,
		Action: counter.Action(row.Action), StationID: row.StationID, TurnID: row.TurnID, RequestHash: row.RequestHash,
		At: row.At.UTC()}
}

// CounterLinks is the Postgres counter.Repository.
type CounterLinks struct{ db *DB }

// NewCounterLinks builds the repository.
func NewCounterLinks(db *DB) *CounterLinks { return &CounterLinks{db: db} }

// CreateLink stores a new link.
func (r *CounterLinks) CreateLink(ctx context.Context, l counter.Link) error {
	_, err := r.db.IDB(ctx).NewInsert().Model(counterLinkToRow(l)).Exec(ctx)
	return wrap(err, "insert counter link")
}

// GetLink returns a link by id.
func (r *CounterLinks) GetLink(ctx context.Context, id string) (counter.Link, error) {
	var row counterLinkRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return counter.Link{}, notFound(err, "counter link", id)
	}
	return row.domain(), nil
}

// GetLinkByHash returns the link whose value hashes to hash.
func (r *CounterLinks) GetLinkByHash(ctx context.Context, hash string) (counter.Link, error) {
	var row counterLinkRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx); err != nil {
		return counter.Link{}, notFound(err, "counter link", "")
	}
	return row.domain(), nil
}

// UpdateLink stores every field of a link.
func (r *CounterLinks) UpdateLink(ctx context.Context, l counter.Link) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(counterLinkToRow(l)).WherePK().Exec(ctx)
	return wrap(err, "update counter link")
}

// ListLinks pages a queue's links by id.
func (r *CounterLinks) ListLinks(ctx context.Context, queueID string, page platform.PageRequest) ([]counter.Link, error) {
	var rows []counterLinkRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("queue_id = ?", queueID).Order("id").Limit(int64(page.Limit + 1))
	if page.After != "" {
		q = q.Where("id > ?", page.After)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list counter links")
	}
	out := make([]counter.Link, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// CountLiveLinks counts the queue's unrevoked links, holding the count
// until the unit of work ends (holdCount), so MaxLinksPerQueue holds
// under concurrent creates.
func (r *CounterLinks) CountLiveLinks(ctx context.Context, queueID string) (int, error) {
	if err := r.db.holdCount(ctx, "counter_links", queueID); err != nil {
		return 0, err
	}
	n, err := r.db.IDB(ctx).NewSelect().Model((*counterLinkRow)(nil)).Where("queue_id = ? AND revoked_at IS NULL", queueID).Count(ctx)
	return int(n), wrap(err, "count counter links")
}

// ClaimPress inserts the press unless its (link, key) is taken. A claim
// racing another of the same key waits on the unique index until the
// other transaction ends: after its commit the insert does nothing and
// the press it stored is read (a new statement sees it under READ
// COMMITTED); after its rollback the insert goes through.
func (r *CounterLinks) ClaimPress(ctx context.Context, p counter.Press) (counter.Press, bool, error) {
	row := &counterPressRow{ID: p.ID, AccountID: p.AccountID, LinkID: p.LinkID, QueueID: p.QueueID, Key: p.Key,
		Action: string(p.Action), StationID: p.StationID, TurnID: p.TurnID, RequestHash: p.RequestHash, At: p.At}
	res, err := r.db.IDB(ctx).NewInsert().Model(row).On("CONFLICT (link_id, key) DO NOTHING").Exec(ctx)
	if err != nil {
		return counter.Press{}, false, wrap(err, "insert counter press")
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return counter.Press{}, true, nil
	}
	var prev counterPressRow
	if err := r.db.IDB(ctx).NewSelect().Model(&prev).Where("link_id = ? AND key = ?", p.LinkID, p.Key).Scan(ctx); err != nil {
		return counter.Press{}, false, wrap(err, "read counter press")
	}
	return prev.domain(), false, nil
}

// SetPressTurn records the turn a press acted on.
func (r *CounterLinks) SetPressTurn(ctx context.Context, pressID, turnID string) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model((*counterPressRow)(nil)).Set("turn_id = ?", turnID).Where("id = ?", pressID).Exec(ctx)
	return wrap(err, "update counter press")
}

// PressesOfTurn returns a turn's presses, oldest first.
func (r *CounterLinks) PressesOfTurn(ctx context.Context, turnID string) ([]counter.Press, error) {
	var rows []counterPressRow
	if err := r.db.IDB(ctx).NewSelect().Model(&rows).Where("turn_id = ?", turnID).Order("id").Scan(ctx); err != nil {
		return nil, wrap(err, "list counter presses")
	}
	out := make([]counter.Press, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}
