package postgres

import (
	"context"
)

// CountServedByPhone counts the queue's COMPLETED turns taken with phone,
// through turns_phone_idx (migration 0162).
func (r *Turns) CountServedByPhone(ctx context.Context, queueID, phone string) (int, error) {
	var n int
	err := r.db.IDB(ctx).NewRaw(`SELECT count(*) FROM turns WHERE queue_id = ? AND phone = ? AND status = 'COMPLETED'`,
		queueID, phone).Scan(ctx, &n)
	return n, wrap(err, "count a phone's served turns")
}
