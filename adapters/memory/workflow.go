package memory

import (
	"context"
	"slices"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/workflow"
)

// Workflow is the memory workflow.Repository and ForwardRepository: queue
// links and the forwards made through them.
type Workflow struct {
	s        *Store
	links    *table[workflow.Link]
	forwards *table[workflow.Forward]
	// byPair is the unique index (turn, link) -> forward id.
	byPair *table[string]
}

// NewWorkflow builds the repository on s. Deleting a queue deletes the
// links from and to it and the forwards into it; deleting a run deletes
// the forwards of its turns and unsets the destination turns it held, as
// the Postgres foreign keys do.
func NewWorkflow(s *Store) *Workflow {
	r := &Workflow{s: s, links: newTable[workflow.Link](s), forwards: newTable[workflow.Forward](s), byPair: newTable[string](s)}
	s.OnDelete("queue", func(ctx context.Context, queueID string) {
		for _, l := range sorted(r.links.rows, "", 0, func(l workflow.Link) bool {
			return l.FromQueueDefinitionID == queueID || l.ToQueueDefinitionID == queueID
		}) {
			r.s.write(ctx, func() func() { return r.links.del(l.ID) })
		}
		for _, fw := range sorted(r.forwards.rows, "", 0, func(fw workflow.Forward) bool { return fw.ToQueueID == queueID }) {
			r.deleteForward(ctx, fw)
		}
	})
	s.OnDelete("run", func(ctx context.Context, runID string) {
		for _, fw := range sorted(r.forwards.rows, "", 0, func(fw workflow.Forward) bool {
			return fw.FromRunID == runID || (fw.ToRunID != nil && *fw.ToRunID == runID)
		}) {
			if fw.FromRunID == runID {
				r.deleteForward(ctx, fw)
				continue
			}
			fw.ToTurnID = nil
			r.s.write(ctx, func() func() { return r.forwards.put(fw.ID, fw) })
		}
	})
	return r
}

func (r *Workflow) deleteForward(ctx context.Context, fw workflow.Forward) {
	r.s.write(ctx, func() func() {
		u1, u2 := r.forwards.del(fw.ID), r.byPair.del(pairKey(fw.FromTurnID, fw.LinkID))
		return func() {
			if u2 != nil {
				u2()
			}
			if u1 != nil {
				u1()
			}
		}
	})
}

func pairKey(turnID, linkID string) string { return turnID + "\x00" + linkID }

// cloneLink keeps callers from sharing the stored conditions.
func cloneLink(l workflow.Link) workflow.Link {
	l.Conditions = slices.Clone(l.Conditions)
	if l.Conditions == nil {
		l.Conditions = []workflow.Condition{}
	}
	return l
}

// CreateLink stores a new link.
func (r *Workflow) CreateLink(ctx context.Context, l workflow.Link) error {
	r.s.write(ctx, func() func() { return r.links.put(l.ID, cloneLink(l)) })
	return nil
}

// GetLink returns a link.
func (r *Workflow) GetLink(ctx context.Context, id string) (l workflow.Link, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if l, ok = r.links.rows[id]; !ok {
			err = platform.NotFound("queue link", id)
		}
		l = cloneLink(l)
	})
	return l, err
}

// UpdateLink replaces a link.
func (r *Workflow) UpdateLink(ctx context.Context, l workflow.Link) error {
	r.s.write(ctx, func() func() { return r.links.put(l.ID, cloneLink(l)) })
	return nil
}

// DeleteLink removes a link.
func (r *Workflow) DeleteLink(ctx context.Context, id string) error {
	r.s.write(ctx, func() func() { return r.links.del(id) })
	return nil
}

// ListLinks pages the account's links by id.
func (r *Workflow) ListLinks(ctx context.Context, accountID string, page platform.PageRequest) (out []workflow.Link, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.links.rows, page.After, page.Limit+1, func(l workflow.Link) bool { return l.AccountID == accountID })
		for i := range out {
			out[i] = cloneLink(out[i])
		}
	})
	return out, nil
}

// LinksFrom returns the links whose source is the queue, oldest first.
func (r *Workflow) LinksFrom(ctx context.Context, queueID string) (out []workflow.Link, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.links.rows, "", 0, func(l workflow.Link) bool { return l.FromQueueDefinitionID == queueID })
		for i := range out {
			out[i] = cloneLink(out[i])
		}
	})
	return out, nil
}

// CreateForward stores a forward unless its (turn, link) has one.
func (r *Workflow) CreateForward(ctx context.Context, fw workflow.Forward) (created bool, err error) {
	r.s.write(ctx, func() func() {
		k := pairKey(fw.FromTurnID, fw.LinkID)
		if _, dup := r.byPair.rows[k]; dup {
			return nil
		}
		created = true
		u1, u2 := r.forwards.put(fw.ID, fw), r.byPair.put(k, fw.ID)
		return func() { u2(); u1() }
	})
	return created, nil
}

// GetForward returns a forward.
func (r *Workflow) GetForward(ctx context.Context, id string) (fw workflow.Forward, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if fw, ok = r.forwards.rows[id]; !ok {
			err = platform.NotFound("forward", id)
		}
	})
	return fw, err
}

// GetForwardForUpdate is GetForward: memory units of work are serialised.
func (r *Workflow) GetForwardForUpdate(ctx context.Context, id string) (workflow.Forward, error) {
	return r.GetForward(ctx, id)
}

// ForwardOfForUpdate returns the forward of (turn, link).
func (r *Workflow) ForwardOfForUpdate(ctx context.Context, turnID, linkID string) (fw workflow.Forward, err error) {
	r.s.read(ctx, func() {
		id, ok := r.byPair.rows[pairKey(turnID, linkID)]
		if !ok {
			err = platform.NotFound("forward", turnID+"/"+linkID)
			return
		}
		fw = r.forwards.rows[id]
	})
	return fw, err
}

// UpdateForward replaces a forward.
func (r *Workflow) UpdateForward(ctx context.Context, fw workflow.Forward) error {
	r.s.write(ctx, func() func() { return r.forwards.put(fw.ID, fw) })
	return nil
}

// ForwardsOfLink pages a link's forwards by id.
func (r *Workflow) ForwardsOfLink(ctx context.Context, linkID string, page platform.PageRequest) (out []workflow.Forward, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.forwards.rows, page.After, page.Limit+1, func(fw workflow.Forward) bool { return fw.LinkID == linkID })
	})
	return out, nil
}

// ForwardsOfTurn returns a source turn's forwards by id.
func (r *Workflow) ForwardsOfTurn(ctx context.Context, turnID string) (out []workflow.Forward, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.forwards.rows, "", 0, func(fw workflow.Forward) bool { return fw.FromTurnID == turnID })
	})
	return out, nil
}

// eachForward calls f with each stored forward record; the caller holds
// the store's lock. It is the narrow reading analytics has of this
// repository's table.
func (r *Workflow) eachForward(f func(workflow.Forward)) {
	for _, fw := range r.forwards.rows {
		f(fw)
	}
}
