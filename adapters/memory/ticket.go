package memory

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/ticket"
)

// TicketLinks is the memory ticket.Repository.
type TicketLinks struct {
	s    *Store
	rows *table[ticket.Link]
}

// NewTicketLinks builds the repository on s; a run's links go with its
// turns.
func NewTicketLinks(s *Store) *TicketLinks {
	r := &TicketLinks{s: s, rows: newTable[ticket.Link](s)}
	s.OnDelete("run", func(ctx context.Context, runID string) {
		for id, l := range r.rows.rows {
			if l.RunID == runID {
				r.s.write(ctx, func() func() { return r.rows.del(id) })
			}
		}
	})
	return r
}

// Create stores a new link.
func (r *TicketLinks) Create(ctx context.Context, l ticket.Link) error {
	r.s.write(ctx, func() func() { return r.rows.put(l.ID, l) })
	return nil
}

// GetByHash returns the link with the hash.
func (r *TicketLinks) GetByHash(ctx context.Context, hash string) (l ticket.Link, err error) {
	err = platform.NotFound("ticket link", "")
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

// CountByTurn counts a turn's links.
func (r *TicketLinks) CountByTurn(ctx context.Context, turnID string) (n int, err error) {
	r.s.read(ctx, func() {
		for _, l := range r.rows.rows {
			if l.TurnID == turnID {
				n++
			}
		}
	})
	return n, nil
}
