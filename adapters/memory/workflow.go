package memory

import (
	"context"
	"slices"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/workflow"
)

var _ workflow.Repository = (*Workflow)(nil)

// Workflow is the memory workflow.Repository: queue links.
type Workflow struct {
	s     *Store
	links *table[workflow.Link]
}

// NewWorkflow builds the repository on s. Deleting a queue deletes the
// links from and to it, as the Postgres foreign keys do.
func NewWorkflow(s *Store) *Workflow {
	r := &Workflow{s: s, links: newTable[workflow.Link](s)}
	s.OnDelete("queue", func(ctx context.Context, queueID string) {
		for _, l := range sorted(r.links.rows, "", 0, func(l workflow.Link) bool {
			return l.FromQueueDefinitionID == queueID || l.ToQueueDefinitionID == queueID
		}) {
			r.s.write(ctx, func() func() { return r.links.del(l.ID) })
		}
	})
	return r
}

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
