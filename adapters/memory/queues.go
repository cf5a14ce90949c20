package memory

import (
	"context"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Queues is the memory queues.Repository.
type Queues struct {
	s        *Store
	queues   *table[queues.Queue]
	stations *table[queues.Station]
	runs     *table[queues.Run]
	// stationsOf: the ids of each queue's stations, so a turn's view does
	// not scan every station of the store (issue 16, item 4).
	stationsOf map[string]map[string]struct{}
}

// NewQueues builds the repository on s; deleting an entity deletes its
// queues, and deleting a queue its stations and runs.
func NewQueues(s *Store) *Queues {
	r := &Queues{s: s, queues: newTable[queues.Queue](s), stations: newTable[queues.Station](s), runs: newTable[queues.Run](s),
		stationsOf: map[string]map[string]struct{}{}}
	s.queues = r
	s.OnDelete("entity", func(ctx context.Context, entityID string) {
		for _, q := range sorted(r.queues.rows, "", 0, func(q queues.Queue) bool { return q.EntityID == entityID }) {
			r.deleteQueue(ctx, q.ID)
		}
	})
	return r
}

// deleteQueue runs inside the unit of work of the entity's deletion.
func (r *Queues) deleteQueue(ctx context.Context, id string) {
	r.s.write(ctx, func() func() { return r.queues.del(id) })
	for _, st := range r.stationsOfQueue(id) {
		r.s.write(ctx, func() func() { return r.delStation(st) })
	}
	for _, run := range sorted(r.runs.rows, "", 0, func(run queues.Run) bool { return run.QueueID == id }) {
		r.s.write(ctx, func() func() { return r.runs.del(run.ID) })
		r.s.cascade(ctx, "run", run.ID)
	}
	r.s.cascade(ctx, "queue", id)
}

// CreateQueue stores a new queue.
func (r *Queues) CreateQueue(ctx context.Context, q queues.Queue) error {
	r.s.write(ctx, func() func() { return r.queues.put(q.ID, q) })
	return nil
}

// GetQueue returns a queue.
func (r *Queues) GetQueue(ctx context.Context, id string) (q queues.Queue, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if q, ok = r.queues.rows[id]; !ok {
			err = platform.NotFound("queue", id)
		}
		q = r.inBranch(q)
	})
	return q, err
}

// inBranch gives q its entity's time zone, as the SQL repository's join
// does; called under the store's lock.
func (r *Queues) inBranch(q queues.Queue) queues.Queue {
	if r.s.branchZone != nil {
		q.BranchTimezone = r.s.branchZone(q.EntityID)
	}
	q.ResolveZone()
	return q
}

// GetQueueForUpdate is GetQueue: memory units of work are serialised.
func (r *Queues) GetQueueForUpdate(ctx context.Context, id string) (queues.Queue, error) {
	return r.GetQueue(ctx, id)
}

// UpdateQueue replaces a queue.
func (r *Queues) UpdateQueue(ctx context.Context, q queues.Queue) error {
	r.s.write(ctx, func() func() { return r.queues.put(q.ID, q) })
	return nil
}

// ListQueues pages the account's queues by id.
func (r *Queues) ListQueues(ctx context.Context, accountID, entityID string, page platform.PageRequest) (out []queues.Queue, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.queues.rows, page.After, page.Limit+1, func(q queues.Queue) bool {
			return q.AccountID == accountID && (entityID == "" || q.EntityID == entityID)
		})
		for i := range out {
			out[i] = r.inBranch(out[i])
		}
	})
	return out, nil
}

// CreateStation stores a new station.
func (r *Queues) CreateStation(ctx context.Context, st queues.Station) error {
	r.s.write(ctx, func() func() {
		undo := r.stations.put(st.ID, st)
		addTo(r.stationsOf, st.QueueID, st.ID)
		return func() { undo(); removeFrom(r.stationsOf, st.QueueID, st.ID) }
	})
	return nil
}

// delStation removes a station and its index entry; called through
// Store.write.
func (r *Queues) delStation(st queues.Station) func() {
	undo := r.stations.del(st.ID)
	if undo == nil {
		return nil
	}
	removeFrom(r.stationsOf, st.QueueID, st.ID)
	return func() { undo(); addTo(r.stationsOf, st.QueueID, st.ID) }
}

// stationsOfQueue returns a queue's stations by id; the caller holds the
// store's lock.
func (r *Queues) stationsOfQueue(queueID string) []queues.Station {
	ids := r.stationsOf[queueID]
	if len(ids) == 0 {
		// What sorted returns for none (empty, not nil), without its
		// map, slices and sort: a queue without stations is every
		// memory-mode GET of P1's (issue 30).
		return []queues.Station{}
	}
	rows := make(map[string]queues.Station, len(ids))
	for id := range ids {
		rows[id] = r.stations.rows[id]
	}
	return sorted(rows, "", 0, nil)
}

// GetStation returns a station.
func (r *Queues) GetStation(ctx context.Context, id string) (st queues.Station, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if st, ok = r.stations.rows[id]; !ok {
			err = platform.NotFound("station", id)
		}
	})
	return st, err
}

// DeleteStation removes a station.
func (r *Queues) DeleteStation(ctx context.Context, id string) error {
	r.s.write(ctx, func() func() {
		st, ok := r.stations.rows[id]
		if !ok {
			return nil
		}
		return r.delStation(st)
	})
	r.s.cascade(ctx, "station", id)
	return nil
}

// ListStations lists a queue's stations, oldest first.
func (r *Queues) ListStations(ctx context.Context, queueID string) (out []queues.Station, err error) {
	r.s.read(ctx, func() {
		out = r.stationsOfQueue(queueID)
	})
	return out, nil
}

// CreateRun stores a new run.
func (r *Queues) CreateRun(ctx context.Context, run queues.Run) error {
	r.s.write(ctx, func() func() { return r.runs.put(run.ID, run) })
	return nil
}

// GetRun returns a run.
func (r *Queues) GetRun(ctx context.Context, id string) (run queues.Run, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if run, ok = r.runs.rows[id]; !ok {
			err = platform.NotFound("queue run", id)
		}
	})
	return run, err
}

// GetRunForUpdate is GetRun: memory units of work are serialised.
func (r *Queues) GetRunForUpdate(ctx context.Context, id string) (queues.Run, error) {
	return r.GetRun(ctx, id)
}

// UpdateRun replaces a run.
func (r *Queues) UpdateRun(ctx context.Context, run queues.Run) error {
	r.s.write(ctx, func() func() { return r.runs.put(run.ID, run) })
	return nil
}

// ListRuns returns a queue's newest runs first.
func (r *Queues) ListRuns(ctx context.Context, queueID string, limit int) (out []queues.Run, err error) {
	r.s.read(ctx, func() {
		all := sorted(r.runs.rows, "", 0, func(run queues.Run) bool { return run.QueueID == queueID })
		for i := len(all) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
			out = append(out, all[i])
		}
	})
	return out, nil
}
