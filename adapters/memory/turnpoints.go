package memory

import (
	"context"

	"github.com/qms-dev/qms/core/turns"
)

// CountServedByPhone counts the queue's COMPLETED turns taken with phone.
func (r *Turns) CountServedByPhone(ctx context.Context, queueID, phone string) (n int, err error) {
	r.s.read(ctx, func() {
		r.ofQueue(queueID, func(t turns.Turn) {
			if t.Status == turns.Completed && t.Phone != nil && *t.Phone == phone {
				n++
			}
		})
	})
	return n, nil
}
