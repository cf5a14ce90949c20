package postgres

import (
	"context"
	"fmt"
	"time"
)

// Pruner is the postgres ports.Pruner. Every call is one DELETE of at most
// limit rows, chosen by primary key from an index on their age (migration
// 0075), run on the pool outside any unit of work: it commits on its own,
// so a large backlog is deleted in many short transactions, each holding
// row locks on one batch only and never a table lock.
type Pruner struct{ db *DB }

// NewPruner returns a pruner on db.
func NewPruner(db *DB) *Pruner { return &Pruner{db: db} }

func (p *Pruner) exec(ctx context.Context, what, sql string, before time.Time, limit int) (int, error) {
	tag, err := p.db.Pool.Exec(ctx, sql, before.UTC(), limit)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune %s: %w", what, err)
	}
	return int(tag.RowsAffected()), nil
}

// PruneEvents implements ports.Pruner.
func (p *Pruner) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	return p.exec(ctx, "events", `DELETE FROM events WHERE id IN (
		SELECT id FROM events WHERE occurred_at < $1 ORDER BY occurred_at LIMIT $2)`, before, limit)
}

// PruneDeliveries implements ports.Pruner.
func (p *Pruner) PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	return p.exec(ctx, "webhook deliveries", `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE status <> 'PENDING' AND created_at < $1 ORDER BY created_at LIMIT $2)
		AND status <> 'PENDING'`, before, limit)
}

// PruneLineChanges implements ports.Pruner.
func (p *Pruner) PruneLineChanges(ctx context.Context, before time.Time, limit int) (int, error) {
	return p.exec(ctx, "line changes", `DELETE FROM turn_line_changes WHERE (run_id, version) IN (
		SELECT c.run_id, c.version FROM queue_runs r JOIN turn_line_changes c ON c.run_id = r.id
		WHERE r.status = 'CLOSED' AND r.closed_at < $1 LIMIT $2)`, before, limit)
}

// PruneForwards implements ports.Pruner.
func (p *Pruner) PruneForwards(ctx context.Context, before time.Time, limit int) (int, error) {
	return p.exec(ctx, "forwards", `DELETE FROM queue_forwards WHERE id IN (
		SELECT id FROM queue_forwards WHERE status <> 'PENDING' AND updated_at < $1 ORDER BY updated_at LIMIT $2)
		AND status <> 'PENDING'`, before, limit)
}

// PruneTicketLinks implements ports.Pruner. It walks ticket_links (only
// the live links: of unfinished turns and of turns finished lately), each
// joined to its turn by primary key, rather than the turns table, which is
// never pruned and would be scanned again on every run: no index is needed.
// The outer condition checks the turn again, as the other prunes do.
func (p *Pruner) PruneTicketLinks(ctx context.Context, before time.Time, limit int) (int, error) {
	return p.exec(ctx, "ticket links", `DELETE FROM ticket_links WHERE id IN (
		SELECT l.id FROM ticket_links l JOIN turns t ON t.id = l.turn_id
		WHERE t.finished_at < $1 LIMIT $2)
		AND turn_id IN (SELECT id FROM turns WHERE finished_at < $1)`, before, limit)
}

// PruneRateLimits implements ports.Pruner.
func (p *Pruner) PruneRateLimits(ctx context.Context, before time.Time, limit int) (int, error) {
	// A key is one row (its one-second buckets, migration 0085): idle since
	// before, its window is long over.
	return p.exec(ctx, "rate limits", `DELETE FROM rate_limits WHERE key IN (
		SELECT key FROM rate_limits WHERE updated_at < $1 LIMIT $2)`, before, limit)
}
