package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
)

type eventRow struct {
	bun.BaseModel `bun:"table:events"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	Name          string    `bun:"name"`
	QueueID       *string   `bun:"queue_id"`
	RunID         *string   `bun:"run_id"`
	Data          jsonb     `bun:"data,type:json"`
	OccurredAt    time.Time `bun:"occurred_at"`
}

// Events is the Postgres event log.
type Events struct{ db *DB }

// NewEvents builds the event log.
func NewEvents(db *DB) *Events { return &Events{db: db} }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Append records an event in the caller's transaction. Its data is kept
// as the bytes the core marshalled (a json column, not jsonb, which would
// reorder keys and add spaces): every reader of the log sees what the
// in-transaction subscribers saw.
func (r *Events) Append(ctx context.Context, e platform.Event) error {
	row := &eventRow{ID: e.ID, AccountID: e.AccountID, Name: e.Name, QueueID: nullable(e.QueueID),
		RunID: nullable(e.RunID), Data: jsonb(e.DataOrEmpty()), OccurredAt: e.OccurredAt}
	// Through pgx with parameters: prepared once per connection, not planned
	// on every event (see DB.withPgx). Inside a unit of work the same
	// statement reads the account's endpoints subscribed to the event, which
	// the webhooks subscriber asks for next (SubscribedEndpoints): one round
	// trip for both (issue 16).
	args := []any{row.ID, row.AccountID, row.Name, row.QueueID, row.RunID, string(row.Data), row.OccurredAt}
	if !r.db.InTx(ctx) || e.AccountID == "" {
		err := r.db.withPgx(ctx, func(q pgxQuerier) error {
			_, err := q.Exec(ctx, insertEventSQL, args...)
			return err
		})
		if err == nil {
			r.announce(ctx, e.AccountID)
		}
		return wrap(err, "insert event")
	}
	if events.IsInternal(e.Name) {
		// No endpoint subscribes to an internal event (webhooks skips
		// them): the insert waits for the transaction's next statement,
		// so a change that raises turn_state.changed costs no round trip
		// more than one that raises nothing.
		err := r.db.deferWrite(ctx, func(err error) error { return wrap(err, "insert event") }, insertEventSQL, args...)
		if err != nil {
			return err
		}
		r.announce(ctx, e.AccountID)
		return nil
	}
	if subs, ok := r.db.foldedSubscribers(ctx, e.AccountID, e.Name); ok {
		// The run's lock read the account's endpoints: the insert waits
		// and goes out with the transaction's next statement, usually its
		// COMMIT (deferred.go).
		err := r.db.deferWrite(ctx, func(err error) error { return wrap(err, "insert event") }, insertEventSQL, args...)
		if err != nil {
			return err
		}
		r.announce(ctx, e.AccountID)
		r.db.foldSubscribed(ctx, e.AccountID, e.Name, subs)
		return nil
	}
	var subs []webhookEndpointRow
	err := r.db.withPgxRows(ctx, `WITH e AS (`+insertEventSQL+`)
		SELECT id, account_id, url, events, created_at FROM webhook_endpoints
		WHERE account_id = $2 AND $3 = ANY (events) ORDER BY id`, args, func(scan func(...any) error) error {
		var w webhookEndpointRow
		if err := scan(&w.ID, &w.AccountID, &w.URL, &w.Events, &w.CreatedAt); err != nil {
			return err
		}
		subs = append(subs, w)
		return nil
	})
	if err == nil {
		r.announce(ctx, e.AccountID)
		r.db.foldSubscribed(ctx, e.AccountID, e.Name, subs)
	}
	return wrap(err, "insert event")
}

// foldSubscribed keeps the endpoints subscribed to the event just
// appended for the next SubscribedEndpoints.
func (db *DB) foldSubscribed(ctx context.Context, accountID, event string, subs []webhookEndpointRow) {
	db.fold(ctx, func(f *folded) {
		if f.subscribed == nil {
			f.subscribed = map[string][]webhookEndpointRow{}
		}
		f.subscribed[subscribedKey(accountID, event)] = subs
	})
}

// announce has the process's announcer tell listening processes of the
// account's new event once the unit of work in ctx commits (at once
// outside one).
func (r *Events) announce(ctx context.Context, accountID string) {
	r.db.AfterCommit(ctx, func() { r.db.announcer.announce(accountID) })
}

const insertEventSQL = `INSERT INTO events (id, account_id, name, queue_id, run_id, data, occurred_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7)`

// List returns the account's events after the given id, oldest first.
func (r *Events) List(ctx context.Context, accountID, after string, limit int) ([]platform.Event, error) {
	var rows []eventRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("account_id = ?", accountID).Where("id > ?", after).Order("id")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list events")
	}
	out := make([]platform.Event, len(rows))
	for i, row := range rows {
		e := platform.Event{ID: row.ID, AccountID: row.AccountID, Name: row.Name, OccurredAt: row.OccurredAt}
		if row.QueueID != nil {
			e.QueueID = *row.QueueID
		}
		if row.RunID != nil {
			e.RunID = *row.RunID
		}
		e.Data = json.RawMessage(row.Data)
		out[i] = e
	}
	return out, nil
}
