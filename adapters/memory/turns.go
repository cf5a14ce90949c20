package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// Turns is the memory turns.Repository. Units of work are serialised by
// the store, so "locking" reads are plain reads and TakeNext never needs to
// skip a row another transaction holds.
type Turns struct {
	s       *Store
	turns   *turnRows
	numbers *table[counter] // by run id
	lines   *table[int64]   // line version by run id
	changes *table[[]turns.LineChange]
	seq     *table[int64]     // one row, the arrival sequence
	marks   *table[time.Time] // turnmarks.go, by turn id + "/" + kind
}

// NewTurns builds the repository on s: deleting a run deletes its turns,
// and deleting a station unassigns it from its turns.
func NewTurns(s *Store) *Turns {
	r := &Turns{s: s, turns: newTurnRows(), numbers: newTable[counter](s), lines: newTable[int64](s),
		changes: newTable[[]turns.LineChange](s), seq: newTable[int64](s), marks: newTable[time.Time](s)}
	s.turns = r
	s.OnDelete("run", func(ctx context.Context, runID string) {
		for id := range maps.Clone(r.turns.byRun[runID]) {
			r.s.write(ctx, func() func() { return r.turns.del(id) })
		}
		r.s.write(ctx, func() func() { return r.lines.del(runID) })
		r.s.write(ctx, func() func() { return r.numbers.del(runID) })
		r.s.write(ctx, func() func() { return r.changes.del(runID) })
	})
	s.OnDelete("station", func(ctx context.Context, stationID string) {
		// The station's index, not every stored turn (issue 16).
		for _, t := range sorted(r.turns.of(r.turns.byStation[stationID]), "", 0, func(turns.Turn) bool { return true }) {
			t.StationID = nil
			r.s.write(ctx, func() func() { return r.turns.put(t) })
		}
	})
	return r
}

// cloneTurn copies the turn's map so callers never share it with the table.
func cloneTurn(t turns.Turn) turns.Turn {
	if t.FormResponse != nil {
		m := make(map[string]string, len(t.FormResponse))
		for k, v := range t.FormResponse {
			m[k] = v
		}
		t.FormResponse = m
	}
	return t
}

// Create stores a new turn; ErrDuplicateKey when the account already has
// a turn with its idempotency key.
func (r *Turns) Create(ctx context.Context, t turns.Turn) (err error) {
	r.s.write(ctx, func() func() {
		if t.IdempotencyKey != nil {
			if _, taken := r.turns.byKey[keyOf(t.AccountID, t.IdempotencyKey)]; taken {
				err = turns.ErrDuplicateKey
				return nil
			}
		}
		return r.turns.put(cloneTurn(t))
	})
	return err
}

// Get returns a turn.
func (r *Turns) Get(ctx context.Context, id string) (t turns.Turn, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if t, ok = r.turns.rows[id]; !ok {
			err = platform.NotFound("turn", id)
		}
		t = cloneTurn(t)
	})
	return t, err
}

// GetForUpdate is Get: memory units of work are serialised.
func (r *Turns) GetForUpdate(ctx context.Context, id string) (turns.Turn, error) {
	return r.Get(ctx, id)
}

// Update replaces a turn, refusing a station another turn occupies.
func (r *Turns) Update(ctx context.Context, t turns.Turn) (err error) {
	r.s.write(ctx, func() func() {
		if t.StationID != nil && t.Status.AtStation() {
			if id, busy := r.turns.atStation[*t.StationID]; busy && id != t.ID {
				o := r.turns.rows[id]
				err = platform.Conflict(turns.CodeStationBusy, "the station is serving another turn",
					map[string]any{"stationId": *t.StationID, "turnId": o.ID, "turnStatus": string(o.Status)})
				return nil
			}
		}
		return r.turns.put(cloneTurn(t))
	})
	return err
}

// ByIdempotencyKey finds the account's turn created with key.
func (r *Turns) ByIdempotencyKey(ctx context.Context, accountID, key string) (t turns.Turn, err error) {
	err = platform.NotFound("turn", key)
	r.s.read(ctx, func() {
		if id, ok := r.turns.byKey[keyOf(accountID, &key)]; ok {
			t, err = cloneTurn(r.turns.rows[id]), nil
		}
	})
	return t, err
}

// counter is a run's number counter in its numbering period.
type counter struct {
	period string
	last   int
}

// NextNumber increments the run's counter in period.
func (r *Turns) NextNumber(ctx context.Context, runID, period string) (n int, err error) {
	r.s.write(ctx, func() func() {
		c := r.numbers.rows[runID]
		if c.period != period && c.period != "" && period != "" {
			c.last = 0 // a new local day
		}
		c.period = period
		c.last++
		n = c.last
		return r.numbers.put(runID, c)
	})
	return n, nil
}

// CodeInUse reports whether a turn of the run that is or may come back in
// the line shows code.
func (r *Turns) CodeInUse(ctx context.Context, runID, code string, since time.Time) (held bool, err error) {
	r.s.read(ctx, func() {
		for id := range r.turns.byCode[codeOf(runID, code)] {
			o := r.turns.rows[id]
			back := o.Status == turns.NoShow || (o.FinishedAt != nil && o.FinishedAt.After(since))
			if !o.Status.Finished() || back {
				held = true
				return
			}
		}
	})
	return held, nil
}

// NextSeq returns the next arrival sequence number.
func (r *Turns) NextSeq(ctx context.Context) (n int64, err error) {
	r.s.write(ctx, func() func() {
		n = r.seq.rows[""] + 1
		return r.seq.put("", n)
	})
	return n, nil
}

// first returns the run's turn in status that comes first in line order.
func (r *Turns) first(ctx context.Context, runID string, status turns.Status) (t turns.Turn, ok bool) {
	r.s.read(ctx, func() {
		for id := range r.turns.byStatus[runStatus{runID, status}] {
			if o := r.turns.rows[id]; !ok || o.Key().Less(t.Key()) {
				t, ok = o, true
			}
		}
		t = cloneTurn(t)
	})
	return t, ok
}

// TakeNext returns the run's first WAITING turn in line order.
func (r *Turns) TakeNext(ctx context.Context, runID string) (turns.Turn, bool, error) {
	t, ok := r.first(ctx, runID, turns.Waiting)
	return t, ok, nil
}

// TakeWaitlisted returns the run's first WAITLISTED turn in line order.
func (r *Turns) TakeWaitlisted(ctx context.Context, runID string) (turns.Turn, bool, error) {
	t, ok := r.first(ctx, runID, turns.Waitlisted)
	return t, ok, nil
}

// Occupancy counts the run's active and waitlisted turns.
func (r *Turns) Occupancy(ctx context.Context, runID string) (occ turns.Occupancy, err error) {
	r.s.read(ctx, func() {
		for _, st := range []turns.Status{turns.Waiting, turns.Held, turns.Called, turns.InService} {
			occ.Active += len(r.turns.byStatus[runStatus{runID, st}])
		}
		occ.Waitlisted = len(r.turns.byStatus[runStatus{runID, turns.Waitlisted}])
	})
	return occ, nil
}

// AtStation returns the turn the station is serving.
func (r *Turns) AtStation(ctx context.Context, stationID string) (t turns.Turn, ok bool, err error) {
	r.s.read(ctx, func() {
		if id, busy := r.turns.atStation[stationID]; busy {
			t, ok = cloneTurn(r.turns.rows[id]), true
		}
	})
	return t, ok, nil
}

// List pages a run's turns by id.
func (r *Turns) List(ctx context.Context, runID string, statuses []turns.Status, page platform.PageRequest) (out []turns.Turn, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.turns.of(r.turns.byRun[runID]), page.After, page.Limit+1, func(t turns.Turn) bool {
			return len(statuses) == 0 || slices.Contains(statuses, t.Status)
		})
		for i := range out {
			out[i] = cloneTurn(out[i])
		}
	})
	return out, nil
}

// ListArrivals pages the run's unfinished turns that have arrived.
func (r *Turns) ListArrivals(ctx context.Context, runID string, page platform.PageRequest) (out []turns.Turn, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.turns.of(r.turns.byRun[runID]), page.After, page.Limit+1, func(t turns.Turn) bool {
			return t.ArrivedAt != nil && !t.Status.Finished()
		})
		for i := range out {
			out[i] = cloneTurn(out[i])
		}
	})
	return out, nil
}

// BumpLine increments the run's line version and records the change,
// keeping the latest turns.LineChangesKept. The store never draws a line
// version ahead (its DrawnNumber.LineVersion is 0), so a change that
// carries a version must carry the next one.
func (r *Turns) BumpLine(ctx context.Context, runID string, change turns.LineChange) (v int64, err error) {
	r.s.write(ctx, func() func() {
		v = r.lines.rows[runID] + 1
		if change.Version != 0 && change.Version != v {
			err = fmt.Errorf("memory: line change for version %d, the line's next is %d", change.Version, v)
			return nil
		}
		change.Version = v
		undoVersion := r.lines.put(runID, v)
		// Appended in place when the array has room: the undo restores the
		// old slice header, which never sees past its own length, so the
		// old changes stay intact without copying them all on every change
		// (issue 16: that copy was most of an intake's garbage, and GC cost
		// grows with the store). Dropping the oldest reslices; the array is
		// copied only when append outgrows it, once per many changes.
		kept := r.changes.rows[runID]
		if len(kept) >= turns.LineChangesKept {
			kept = kept[len(kept)-turns.LineChangesKept+1:]
		}
		undoChanges := r.changes.put(runID, append(kept, change))
		return func() { undoChanges(); undoVersion() }
	})
	if err != nil {
		return 0, err
	}
	return v, nil
}

// LineChanges returns the run's recorded changes in (after, upTo].
func (r *Turns) LineChanges(ctx context.Context, runID string, after, upTo int64) (out []turns.LineChange, err error) {
	r.s.read(ctx, func() {
		for _, c := range r.changes.rows[runID] {
			if c.Version > after && c.Version <= upTo {
				out = append(out, c)
			}
		}
	})
	return out, nil
}

// LineVersion returns the run's line version.
func (r *Turns) LineVersion(ctx context.Context, runID string) (v int64, err error) {
	r.s.read(ctx, func() { v = r.lines.rows[runID] })
	return v, nil
}

// WaitingLine returns the version and the WAITING turns' keys in line
// order, under one lock.
func (r *Turns) WaitingLine(ctx context.Context, runID string) (v int64, keys []turns.LineKey, err error) {
	r.s.read(ctx, func() {
		v = r.lines.rows[runID]
		for id := range r.turns.byStatus[runStatus{runID, turns.Waiting}] {
			keys = append(keys, r.turns.rows[id].Key())
		}
	})
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	return v, keys, nil
}

// RecentServiceSeconds returns the queue's latest service times, newest
// first, from the queue's services in finishing order.
func (r *Turns) RecentServiceSeconds(ctx context.Context, queueID string, n int) (out []float64, err error) {
	r.s.read(ctx, func() { out = r.recentServiceSeconds(queueID, n) })
	return out, nil
}

// recentServiceSeconds is RecentServiceSeconds with the store's lock held.
func (r *Turns) recentServiceSeconds(queueID string, n int) (out []float64) {
	list := r.turns.served[queueID]
	for i := len(list) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, list[i].seconds)
	}
	return out
}

// ofQueue calls f with each turn of the queue (every run), through the
// byQueue index; the caller holds the store's lock. It is the narrow
// reading analytics has of this repository's table.
func (r *Turns) ofQueue(queueID string, f func(turns.Turn)) { r.turns.ofQueue(queueID, f) }

// GetForView reads a turn with everything its view needs (its queue and
// stations, its run's status and line version, the queue's latest service
// times, for a turn of any status as ViewContext promises) under one read
// lock, as the SQL repository reads them in one
// statement: GET /turns/{id} took five separately locked reads before
// (issue 16, P1). It needs the queues repository on the same store.
func (r *Turns) GetForView(ctx context.Context, id string) (t turns.Turn, vc turns.ViewContext, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if t, ok = r.turns.rows[id]; !ok {
			err = platform.NotFound("turn", id)
			return
		}
		qs := r.s.queues
		if qs == nil {
			err = errors.New("memory: GetForView: no queues repository on the store (NewQueues)")
			return
		}
		q, found := qs.queues.rows[t.QueueID]
		if !found {
			err = platform.NotFound("queue", t.QueueID)
			return
		}
		vc.Queue = qs.inBranch(q)
		vc.Stations = qs.stationsOfQueue(t.QueueID)
		vc.LineVersion = r.lines.rows[t.RunID]
		run, found := qs.runs.rows[t.RunID]
		vc.RunOpen = found && run.Open()
		vc.ServiceSeconds = r.recentServiceSeconds(t.QueueID, turns.ServiceSamples)
		if len(t.FormResponse) > 0 {
			t = cloneTurn(t)
		}
		// else the stored empty map is the view's: a view is read,
		// nothing writes into a turn's form response once made, and a
		// clone of nothing was an allocation of every GET (issue 30).
	})
	return t, vc, err
}
