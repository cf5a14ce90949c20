package memory

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
)

// Events is the memory event log.
type Events struct {
	s    *Store
	rows *table[platform.Event]
}

// NewEvents builds the event log on s.
func NewEvents(s *Store) *Events { return &Events{s: s, rows: newTable[platform.Event](s)} }

// Append records an event.
func (r *Events) Append(ctx context.Context, e platform.Event) error {
	r.s.write(ctx, func() func() { return r.rows.put(e.ID, e) })
	return nil
}

// List returns the account's events after the given id, oldest first.
func (r *Events) List(ctx context.Context, accountID, after string, limit int) (out []platform.Event, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.rows.rows, after, limit, func(e platform.Event) bool { return e.AccountID == accountID })
	})
	return out, nil
}
