package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// folded holds what a unit of work's earlier statements read on behalf of
// later calls (issue 16: at most six round trips per change). A later call
// that finds its answer here sends nothing. Each entry is only as old as
// the statement that read it, inside the same transaction.
type folded struct {
	// subscribed: the endpoints subscribed to the event just appended
	// (Events.Append reads them in its insert's statement), by
	// subscribedKey, taken by the next SubscribedEndpoints.
	subscribed map[string][]webhookEndpointRow
	// accountEndpoints: all the endpoints of an account, read with an
	// intake's run lock (Turns.LockRunForIntake), so the event's insert
	// need not read them and can wait for the commit (Events.Append).
	accountEndpoints map[string][]webhookEndpointRow

	// The locked run's queue's stations and latest service times, read by
	// the run lock's statement, for the change's answer (QueueForView).
	viewQueue    string
	viewKnown    bool
	viewStations []queues.Station
	viewService  []float64
	// lineVersions: each run locked in the transaction by a run lock
	// statement, and its line version as of the lock (then as of this
	// transaction's last bump). The run's lock orders every bump of its
	// line, so the next version is known without asking (BumpLine).
	lineVersions map[string]int64
	// lineChanges: the changes of a locked run's line read with its lock
	// (LockRunForIntake's LineAfter), every version in (after, upTo], for
	// the answer's patch (Turns.LineChanges).
	lineChanges map[string]foldedLineChanges

	// hadService: whether each turn locked in the transaction had a service
	// time when it was read, so an update that gives it one (a completion)
	// or takes it away (a reopening) keeps viewService right.
	hadService map[string]bool
}

func subscribedKey(accountID, event string) string { return accountID + "\x00" + event }

// foldAccountEndpoints keeps all of an account's endpoints.
func (db *DB) foldAccountEndpoints(ctx context.Context, accountID string, eps []webhookEndpointRow) {
	db.fold(ctx, func(f *folded) {
		if f.accountEndpoints == nil {
			f.accountEndpoints = map[string][]webhookEndpointRow{}
		}
		f.accountEndpoints[accountID] = eps
	})
}

// foldedSubscribers returns the account's endpoints subscribed to event,
// from the account's endpoints read earlier in the transaction, if it
// was.
func (db *DB) foldedSubscribers(ctx context.Context, accountID, event string) (subs []webhookEndpointRow, ok bool) {
	db.fold(ctx, func(f *folded) {
		var all []webhookEndpointRow
		if all, ok = f.accountEndpoints[accountID]; !ok {
			return
		}
		for _, w := range all {
			if slices.Contains(w.Events, event) {
				subs = append(subs, w)
			}
		}
	})
	return subs, ok
}

func (db *DB) fold(ctx context.Context, f func(*folded)) {
	if st := db.txFrom(ctx); st != nil {
		st.mu.Lock()
		f(&st.folded)
		st.mu.Unlock()
	}
}

// foldQueueView keeps the stations and service times the run lock read.
func (db *DB) foldQueueView(ctx context.Context, queueID string, stations []queues.Station, service []float64) {
	db.fold(ctx, func(f *folded) {
		f.viewQueue, f.viewKnown, f.viewStations, f.viewService = queueID, true, stations, service
	})
}

// foldedQueueView returns what foldQueueView kept for queueID.
func (db *DB) foldedQueueView(ctx context.Context, queueID string) (stations []queues.Station, service []float64, ok bool) {
	db.fold(ctx, func(f *folded) {
		if f.viewQueue == queueID && f.viewKnown {
			stations, service, ok = f.viewStations, f.viewService, true
		}
	})
	return stations, service, ok
}

// foldLockedTurn notes whether a turn locked in the transaction had a
// service time.
func (db *DB) foldLockedTurn(ctx context.Context, row *turnRow) {
	db.fold(ctx, func(f *folded) {
		if f.hadService == nil {
			f.hadService = map[string]bool{}
		}
		f.hadService[row.ID] = row.ServiceSeconds != nil
	})
}

// foldTurnUpdate keeps the folded service times right after a turn's
// update: a service time the turn gains is the queue's newest (it was
// just completed); one it loses, or a turn not locked before, sends the
// view back to reading them.
func (db *DB) foldTurnUpdate(ctx context.Context, row *turnRow) {
	db.fold(ctx, func(f *folded) {
		if f.viewQueue != row.QueueID || !f.viewKnown {
			return
		}
		had, known := f.hadService[row.ID]
		has := row.ServiceSeconds != nil
		switch {
		case !known || (had && !has):
			f.viewKnown, f.viewStations, f.viewService = false, nil, nil
		case !had && has:
			svc := append([]float64{*row.ServiceSeconds}, f.viewService...)
			if len(svc) > turns.ServiceSamples {
				svc = svc[:turns.ServiceSamples]
			}
			f.viewService = svc
		}
		f.hadService[row.ID] = has
	})
}

// foldLineVersion keeps a locked run's line version.
func (db *DB) foldLineVersion(ctx context.Context, runID string, v int64) {
	db.fold(ctx, func(f *folded) {
		if f.lineVersions == nil {
			f.lineVersions = map[string]int64{}
		}
		f.lineVersions[runID] = v
	})
}

// foldedLineChanges are the line changes of a run in (after, upTo].
type foldedLineChanges struct {
	after, upTo int64
	changes     []turns.LineChange
}

// foldLineChanges keeps the changes of run's line read after version after
// with its lock at version upTo, when they are every version in between
// (a read cut short by its limit, or missing a pruned version, is not
// kept: LineChanges then asks the database).
func (db *DB) foldLineChanges(ctx context.Context, runID string, after, upTo int64, changes []turns.LineChange) {
	if upTo < after || int64(len(changes)) != upTo-after {
		return
	}
	for i, c := range changes {
		if c.Version != after+int64(i)+1 {
			return
		}
	}
	db.fold(ctx, func(f *folded) {
		if f.lineChanges == nil {
			f.lineChanges = map[string]foldedLineChanges{}
		}
		f.lineChanges[runID] = foldedLineChanges{after: after, upTo: upTo, changes: changes}
	})
}

// foldedLineChanges returns the run's changes in (after, upTo] from what
// foldLineChanges kept, when they are all there.
func (db *DB) foldedLineChanges(ctx context.Context, runID string, after, upTo int64) (out []turns.LineChange, ok bool) {
	db.fold(ctx, func(f *folded) {
		k, known := f.lineChanges[runID]
		if !known || after < k.after || upTo > k.upTo || after > upTo {
			return
		}
		out, ok = k.changes[after-k.after:upTo-k.after:upTo-k.after], true
	})
	return out, ok
}

// nextLineVersion returns the version the run's next bump makes, when the
// run was locked in this transaction by a statement that read it, and
// keeps it as the current one.
func (db *DB) nextLineVersion(ctx context.Context, runID string) (next int64, ok bool) {
	db.fold(ctx, func(f *folded) {
		if v, known := f.lineVersions[runID]; known {
			next, ok = v+1, true
			f.lineVersions[runID] = next
		}
	})
	return next, ok
}

// keepDrawnLineVersion keeps v, the version the run's draw made, as the
// run's current one; a draw of this transaction that made another is a
// mistake of the caller's, refused before it records a gap or a clash.
func (db *DB) keepDrawnLineVersion(ctx context.Context, runID string, v int64) (err error) {
	db.fold(ctx, func(f *folded) {
		if known, ok := f.lineVersions[runID]; ok && known != v {
			err = fmt.Errorf("postgres: line change for version %d, the run's line is at %d", v, known)
			return
		}
		if f.lineVersions == nil {
			f.lineVersions = map[string]int64{}
		}
		f.lineVersions[runID] = v
	})
	return err
}
