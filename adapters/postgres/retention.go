package postgres

import (
	"context"
	"fmt"
	"time"
)

// The prune methods of each repository (the retention tasks the modules
// contribute, ports.RetentionTask). Every call is one DELETE of at most
// limit rows, chosen by primary key from an index on their age (migration
// 0075), run on the pool outside any unit of work: it commits on its own,
// so a large backlog is deleted in many short transactions, each holding
// row locks on one batch only and never a table lock.

func prune(ctx context.Context, db *DB, what, sql string, before time.Time, limit int) (int, error) {
	tag, err := db.Pool.Exec(ctx, sql, before.UTC(), limit)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune %s: %w", what, err)
	}
	return int(tag.RowsAffected()), nil
}

// PruneEvents deletes events of the log that occurred before before.
func (r *Events) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	return prune(ctx, r.db, "events", `DELETE FROM events WHERE id IN (
		SELECT id FROM events WHERE occurred_at < $1 ORDER BY occurred_at LIMIT $2)`, before, limit)
}

// PruneDeliveries deletes finished deliveries created before before.
func (r *Webhooks) PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	return prune(ctx, r.db, "webhook deliveries", `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE status <> 'PENDING' AND created_at < $1 ORDER BY created_at LIMIT $2)
		AND status <> 'PENDING'`, before, limit)
}

// PruneLineChanges deletes the line changes of runs closed before before.
func (r *Turns) PruneLineChanges(ctx context.Context, before time.Time, limit int) (int, error) {
	return prune(ctx, r.db, "line changes", `DELETE FROM turn_line_changes WHERE (run_id, version) IN (
		SELECT c.run_id, c.version FROM queue_runs r JOIN turn_line_changes c ON c.run_id = r.id
		WHERE r.status = 'CLOSED' AND r.closed_at < $1 LIMIT $2)`, before, limit)
}

// PruneForwards deletes finished forwards last updated before before.
func (r *Workflow) PruneForwards(ctx context.Context, before time.Time, limit int) (int, error) {
	return prune(ctx, r.db, "forwards", `DELETE FROM queue_forwards WHERE id IN (
		SELECT id FROM queue_forwards WHERE status <> 'PENDING' AND updated_at < $1 ORDER BY updated_at LIMIT $2)
		AND status <> 'PENDING'`, before, limit)
}

// PruneTicketLinks deletes the links of turns that finished before before.
// It walks ticket_links (only the live links: of unfinished turns and of
// turns finished lately), each joined to its turn by primary key, rather
// than the turns table, which is never pruned and would be scanned again
// on every run: no index is needed. The outer condition checks the turn
// again, as the other prunes do.
func (r *TicketLinks) PruneTicketLinks(ctx context.Context, before time.Time, limit int) (int, error) {
	return prune(ctx, r.db, "ticket links", `DELETE FROM ticket_links WHERE id IN (
		SELECT l.id FROM ticket_links l JOIN turns t ON t.id = l.turn_id
		WHERE t.finished_at < $1 LIMIT $2)
		AND turn_id IN (SELECT id FROM turns WHERE finished_at < $1)`, before, limit)
}

// PruneRateLimits deletes the windows of keys idle since before.
func (r *RateLimiter) PruneRateLimits(ctx context.Context, before time.Time, limit int) (int, error) {
	// A key is one row (its one-second buckets, migration 0085): idle since
	// before, its window is long over.
	return prune(ctx, r.db, "rate limits", `DELETE FROM rate_limits WHERE key IN (
		SELECT key FROM rate_limits WHERE updated_at < $1 LIMIT $2)`, before, limit)
}
