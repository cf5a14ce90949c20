package memory

import (
	"context"
	"sort"

	counters "github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/platform"
)

// CounterLinks is the memory counters.Repository: links and their presses.
type CounterLinks struct {
	s       *Store
	links   *table[counters.Link]
	presses *table[counters.Press]
}

// NewCounterLinks builds the repository on s; a queue's links and presses
// go with it.
func NewCounterLinks(s *Store) *CounterLinks {
	r := &CounterLinks{s: s, links: newTable[counters.Link](s), presses: newTable[counters.Press](s)}
	s.OnDelete("queue", func(ctx context.Context, queueID string) {
		for id, l := range r.links.rows {
			if l.QueueID == queueID {
				r.s.write(ctx, func() func() { return r.links.del(id) })
			}
		}
		for id, p := range r.presses.rows {
			if p.QueueID == queueID {
				r.s.write(ctx, func() func() { return r.presses.del(id) })
			}
		}
	})
	return r
}

// CreateLink stores a new link.
func (r *CounterLinks) CreateLink(ctx context.Context, l counters.Link) error {
	l.StationIDs = append([]string{}, l.StationIDs...)
	r.s.write(ctx, func() func() { return r.links.put(l.ID, l) })
	return nil
}

// GetLink returns a link by id.
func (r *CounterLinks) GetLink(ctx context.Context, id string) (l counters.Link, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if l, ok = r.links.rows[id]; !ok {
			err = platform.NotFound("counter link", id)
		}
	})
	return l, err
}

// GetLinkByHash returns the link with the hash.
func (r *CounterLinks) GetLinkByHash(ctx context.Context, hash string) (l counters.Link, err error) {
	err = platform.NotFound("counter link", "")
	r.s.read(ctx, func() {
		for _, row := range r.links.rows {
			if row.Hash == hash {
				l, err = row, nil
				return
			}
		}
	})
	return l, err
}

// UpdateLink replaces a link.
func (r *CounterLinks) UpdateLink(ctx context.Context, l counters.Link) error {
	r.s.write(ctx, func() func() { return r.links.put(l.ID, l) })
	return nil
}

// ListLinks pages a queue's links by id.
func (r *CounterLinks) ListLinks(ctx context.Context, queueID string, page platform.PageRequest) (out []counters.Link, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.links.rows, page.After, page.Limit+1, func(l counters.Link) bool { return l.QueueID == queueID })
	})
	return out, nil
}

// CountLiveLinks counts a queue's unrevoked links.
func (r *CounterLinks) CountLiveLinks(ctx context.Context, queueID string) (n int, err error) {
	r.s.read(ctx, func() {
		for _, l := range r.links.rows {
			if l.QueueID == queueID && !l.Revoked() {
				n++
			}
		}
	})
	return n, nil
}

// ClaimPress stores p unless its link has a press with its key. Inside a
// unit of work the store's write lock makes the look and the put one step.
func (r *CounterLinks) ClaimPress(ctx context.Context, p counters.Press) (existing counters.Press, claimed bool, err error) {
	r.s.write(ctx, func() func() {
		for _, row := range r.presses.rows {
			if row.LinkID == p.LinkID && row.Key == p.Key {
				existing = row
				return nil
			}
		}
		claimed = true
		return r.presses.put(p.ID, p)
	})
	return existing, claimed, nil
}

// SetPressTurn records the turn a press acted on.
func (r *CounterLinks) SetPressTurn(ctx context.Context, pressID, turnID string) error {
	r.s.write(ctx, func() func() {
		p, ok := r.presses.rows[pressID]
		if !ok {
			return nil
		}
		p.TurnID = &turnID
		return r.presses.put(pressID, p)
	})
	return nil
}

// PressesOfTurn returns a turn's presses, oldest first.
func (r *CounterLinks) PressesOfTurn(ctx context.Context, turnID string) (out []counters.Press, err error) {
	r.s.read(ctx, func() {
		for _, p := range r.presses.rows {
			if p.TurnID != nil && *p.TurnID == turnID {
				out = append(out, p)
			}
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
