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
	help *table[ticket.HelpRequest]
}

// NewTicketLinks builds the repository on s; a run's links go with its
// turns.
func NewTicketLinks(s *Store) *TicketLinks {
	r := &TicketLinks{s: s, rows: newTable[ticket.Link](s), help: newTable[ticket.HelpRequest](s)}
	s.OnDelete("run", func(ctx context.Context, runID string) {
		for id, l := range r.rows.rows {
			if l.RunID == runID {
				r.s.write(ctx, func() func() { return r.rows.del(id) })
			}
		}
		for id, h := range r.help.rows {
			if h.RunID == runID {
				r.s.write(ctx, func() func() { return r.help.del(id) })
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

// CreateHelp stores a help request unless its turn has an open one.
func (r *TicketLinks) CreateHelp(ctx context.Context, h ticket.HelpRequest) (created bool, err error) {
	r.s.write(ctx, func() func() {
		for _, o := range r.help.rows {
			if o.TurnID == h.TurnID && o.Status == ticket.HelpOpen {
				return nil
			}
		}
		created = true
		return r.help.put(h.ID, h)
	})
	return created, nil
}

// GetHelp returns a help request.
func (r *TicketLinks) GetHelp(ctx context.Context, id string) (h ticket.HelpRequest, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if h, ok = r.help.rows[id]; !ok {
			err = platform.NotFound("help request", id)
		}
	})
	return h, err
}

// GetHelpForUpdate returns a help request; the unit of work holds the
// store's write lock already.
func (r *TicketLinks) GetHelpForUpdate(ctx context.Context, id string) (ticket.HelpRequest, error) {
	return r.GetHelp(ctx, id)
}

// UpdateHelp stores a changed help request.
func (r *TicketLinks) UpdateHelp(ctx context.Context, h ticket.HelpRequest) error {
	r.s.write(ctx, func() func() { return r.help.put(h.ID, h) })
	return nil
}

// CountHelpOfTurn counts a turn's help requests.
func (r *TicketLinks) CountHelpOfTurn(ctx context.Context, turnID string) (n int, err error) {
	r.s.read(ctx, func() {
		for _, h := range r.help.rows {
			if h.TurnID == turnID {
				n++
			}
		}
	})
	return n, nil
}

// HelpOfTurn returns a turn's help requests by id.
func (r *TicketLinks) HelpOfTurn(ctx context.Context, turnID string) (out []ticket.HelpRequest, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.help.rows, "", 0, func(h ticket.HelpRequest) bool { return h.TurnID == turnID })
	})
	return out, nil
}

// ListHelp pages through a run's help requests by id.
func (r *TicketLinks) ListHelp(ctx context.Context, runID, status string, page platform.PageRequest) (out []ticket.HelpRequest, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.help.rows, page.After, page.Limit+1, func(h ticket.HelpRequest) bool {
			return h.RunID == runID && (status == "" || h.Status == status)
		})
	})
	return out, nil
}
