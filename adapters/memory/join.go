package memory

import (
	"context"

	"github.com/qms-dev/qms/core/join"
	"github.com/qms-dev/qms/core/platform"
)

// JoinLinks is the memory join.Repository.
type JoinLinks struct {
	s    *Store
	rows *table[join.Link]
}

// NewJoinLinks builds the repository on s; a queue's links go with it.
func NewJoinLinks(s *Store) *JoinLinks {
	r := &JoinLinks{s: s, rows: newTable[join.Link](s)}
	s.OnDelete("queue", func(ctx context.Context, queueID string) {
		for id, l := range r.rows.rows {
			if l.QueueID == queueID {
				r.s.write(ctx, func() func() { return r.rows.del(id) })
			}
		}
	})
	return r
}

// Create stores a new link.
func (r *JoinLinks) Create(ctx context.Context, l join.Link) error {
	r.s.write(ctx, func() func() { return r.rows.put(l.ID, l) })
	return nil
}

// Get returns a link by id.
func (r *JoinLinks) Get(ctx context.Context, id string) (l join.Link, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if l, ok = r.rows.rows[id]; !ok {
			err = platform.NotFound("join link", id)
		}
	})
	return l, err
}

// GetByHash returns the link with the hash.
func (r *JoinLinks) GetByHash(ctx context.Context, hash string) (l join.Link, err error) {
	err = platform.NotFound("join link", "")
	r.s.read(ctx, func() {
		for _, row := range r.rows.rows {
			if row.Hash == hash {
				l, err = row, nil
				return
			}
		}
	})
	return l, err
}

// Update replaces a link.
func (r *JoinLinks) Update(ctx context.Context, l join.Link) error {
	r.s.write(ctx, func() func() { return r.rows.put(l.ID, l) })
	return nil
}

// ListByQueue pages a queue's links by id.
func (r *JoinLinks) ListByQueue(ctx context.Context, queueID string, page platform.PageRequest) (out []join.Link, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.rows.rows, page.After, page.Limit+1, func(l join.Link) bool { return l.QueueID == queueID })
	})
	return out, nil
}

// CountLive counts a queue's unrevoked links.
func (r *JoinLinks) CountLive(ctx context.Context, queueID string) (n int, err error) {
	r.s.read(ctx, func() {
		for _, l := range r.rows.rows {
			if l.QueueID == queueID && !l.Revoked() {
				n++
			}
		}
	})
	return n, nil
}
