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

// The prune methods of each repository (the retention tasks the modules
// contribute, ports.RetentionTask): at most limit rows per call, each call
// under the store's write lock for just that batch.

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

// PruneEvents deletes events of the log that occurred before before.
func (r *Events) PruneEvents(ctx context.Context, before time.Time, limit int) (n int, err error) {
	r.s.write(ctx, func() func() {
		for _, id := range oldest(r.rows.rows, limit, func(e platform.Event) bool { return e.OccurredAt.Before(before) }) {
			r.rows.del(id)
			n++
		}
		return nil
	})
	return n, nil
}

// PruneDeliveries deletes finished deliveries created before before.
func (r *Webhooks) PruneDeliveries(ctx context.Context, before time.Time, limit int) (n int, err error) {
	r.s.write(ctx, func() func() {
		for _, id := range oldest(r.deliveries.rows, limit, func(d webhooks.Delivery) bool {
			return d.Status != webhooks.StatusPending && d.CreatedAt.Before(before)
		}) {
			r.deliveries.del(id)
			n++
		}
		return nil
	})
	return n, nil
}

// PruneLineChanges deletes the line changes of runs closed before before.
// A run's changes are one row here, counted as one.
func (r *Turns) PruneLineChanges(ctx context.Context, before time.Time, limit int) (n int, err error) {
	qs, err := r.queues()
	if err != nil {
		return 0, err
	}
	r.s.write(ctx, func() func() {
		for runID := range r.changes.rows {
			if n >= limit {
				break
			}
			run, ok := qs.runs.rows[runID]
			if ok && (run.Status != queues.RunClosed || run.ClosedAt == nil || !run.ClosedAt.Before(before)) {
				continue
			}
			r.changes.del(runID)
			n++
		}
		return nil
	})
	return n, nil
}

// PruneForwards deletes finished forwards last updated before before.
func (r *Workflow) PruneForwards(ctx context.Context, before time.Time, limit int) (n int, err error) {
	r.s.write(ctx, func() func() {
		for _, id := range oldest(r.forwards.rows, limit, func(fw workflow.Forward) bool {
			return fw.Status != workflow.ForwardPending && fw.UpdatedAt.Before(before)
		}) {
			fw := r.forwards.rows[id]
			r.forwards.del(id)
			r.byPair.del(pairKey(fw.FromTurnID, fw.LinkID))
			n++
		}
		return nil
	})
	return n, nil
}

// PruneTicketLinks deletes the links of turns that finished before before.
// A link whose turn is gone went with its run already; one whose turn is
// not finished is kept.
func (r *TicketLinks) PruneTicketLinks(ctx context.Context, before time.Time, limit int) (n int, err error) {
	tr := r.s.turns
	if tr == nil {
		return 0, errNoTurns
	}
	r.s.write(ctx, func() func() {
		for _, id := range oldest(r.rows.rows, limit, func(l ticket.Link) bool {
			tu, ok := tr.turns.rows[l.TurnID]
			return ok && tu.FinishedAt != nil && tu.FinishedAt.Before(before)
		}) {
			r.rows.del(id)
			n++
		}
		return nil
	})
	return n, nil
}

// PruneRateLimits deletes the windows of keys idle since before.
func (l *RateLimiter) PruneRateLimits(_ context.Context, before time.Time, limit int) (int, error) {
	return l.prune(before, limit), nil
}
