package postgres

import (
	"context"
	"time"
)

// MarkOnce records kind for the turn unless it is recorded: the primary
// key decides, so two at once record one.
func (r *Turns) MarkOnce(ctx context.Context, turnID, kind string, at time.Time) (bool, error) {
	res, err := r.db.IDB(ctx).ExecContext(ctx,
		`INSERT INTO turn_marks (turn_id, kind, at) VALUES (?, ?, ?) ON CONFLICT (turn_id, kind) DO NOTHING`,
		turnID, kind, at.UTC())
	if err != nil {
		return false, wrap(err, "insert turn mark")
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err, "insert turn mark")
}
