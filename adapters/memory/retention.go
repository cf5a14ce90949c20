package memory

import (
	"context"
	"slices"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/core/workflow"
)

// Pruner is the memory ports.Pruner: it deletes from the tables of the
// repositories it was given, at most limit rows per call, each call under
// the store's write lock for just that batch.
type Pruner struct {
	s        *Store
	events   *Events
	webhooks *Webhooks
	turns    *Turns
	queues   *Queues
	workflow *Workflow
	limiter  *RateLimiter
	links    *TicketLinks
}

// NewPruner builds the pruner over the repositories of one store.
func NewPruner(s *Store, ev *Events, wh *Webhooks, tr *Turns, qs *Queues, wf *Workflow, rl *RateLimiter, tl *TicketLinks) *Pruner {
	return &Pruner{s: s, events: ev, webhooks: wh, turns: tr, queues: qs, workflow: wf, limiter: rl, links: tl}
}

// oldest returns the ids of at most limit rows that keep passes, oldest id
// first (ids are time-sortable), so repeated calls work from the oldest.
func oldest[T any](rows map[string]T, limit int, keep func(T) bool) []string {
	var ids []string
	for id, r := range rows {
		if keep(r) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids
}

// PruneEvents implements ports.Pruner.
func (p *Pruner) PruneEvents(ctx context.Context, before time.Time, limit int) (n int, err error) {
	p.s.write(ctx, func() func() {
		for _, id := range oldest(p.events.rows.rows, limit, func(e platform.Event) bool { return e.OccurredAt.Before(before) }) {
			p.events.rows.del(id)
			n++
		}
		return nil
	})
	return n, nil
}

// PruneDeliveries implements ports.Pruner.
func (p *Pruner) PruneDeliveries(ctx context.Context, before time.Time, limit int) (n int, err error) {
	p.s.write(ctx, func() func() {
		for _, id := range oldest(p.webhooks.deliveries.rows, limit, func(d webhooks.Delivery) bool {
			return d.Status != webhooks.StatusPending && d.CreatedAt.Before(before)
		}) {
			p.webhooks.deliveries.del(id)
			n++
		}
		return nil
	})
	return n, nil
}

// PruneLineChanges implements ports.Pruner. A run's changes are one row
// here, counted as one.
func (p *Pruner) PruneLineChanges(ctx context.Context, before time.Time, limit int) (n int, err error) {
	p.s.write(ctx, func() func() {
		for runID := range p.turns.changes.rows {
			if n >= limit {
				break
			}
			r, ok := p.queues.runs.rows[runID]
			if ok && (r.Status != queues.RunClosed || r.ClosedAt == nil || !r.ClosedAt.Before(before)) {
				continue
			}
			p.turns.changes.del(runID)
			n++
		}
		return nil
	})
	return n, nil
}

// PruneForwards implements ports.Pruner.
func (p *Pruner) PruneForwards(ctx context.Context, before time.Time, limit int) (n int, err error) {
	p.s.write(ctx, func() func() {
		for _, id := range oldest(p.workflow.forwards.rows, limit, func(fw workflow.Forward) bool {
			return fw.Status != workflow.ForwardPending && fw.UpdatedAt.Before(before)
		}) {
			fw := p.workflow.forwards.rows[id]
			p.workflow.forwards.del(id)
			p.workflow.byPair.del(pairKey(fw.FromTurnID, fw.LinkID))
			n++
		}
		return nil
	})
	return n, nil
}

// PruneTicketLinks implements ports.Pruner. A link whose turn is gone went
// with its run already; one whose turn is not finished is kept.
func (p *Pruner) PruneTicketLinks(ctx context.Context, before time.Time, limit int) (n int, err error) {
	p.s.write(ctx, func() func() {
		for _, id := range oldest(p.links.rows.rows, limit, func(l ticket.Link) bool {
			tu, ok := p.turns.turns.rows[l.TurnID]
			return ok && tu.FinishedAt != nil && tu.FinishedAt.Before(before)
		}) {
			p.links.rows.del(id)
			n++
		}
		return nil
	})
	return n, nil
}

// PruneRateLimits implements ports.Pruner.
func (p *Pruner) PruneRateLimits(_ context.Context, before time.Time, limit int) (int, error) {
	return p.limiter.prune(before, limit), nil
}
