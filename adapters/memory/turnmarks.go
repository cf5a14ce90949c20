package memory

import (
	"context"
	"time"
)

// MarkOnce records kind for the turn unless it is recorded. A mark
// outlives a deleted turn here (nothing reads it without the turn).
func (r *Turns) MarkOnce(ctx context.Context, turnID, kind string, at time.Time) (created bool, err error) {
	r.s.write(ctx, func() func() {
		k := turnID + "/" + kind
		if _, ok := r.marks.rows[k]; ok {
			return nil
		}
		created = true
		return r.marks.put(k, at)
	})
	return created, nil
}
