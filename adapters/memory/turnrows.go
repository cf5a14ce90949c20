package memory

import (
	"slices"

	"github.com/qms-dev/qms/core/turns"
)

// turnRows is the turns table with the indexes its queries need, kept in
// step with every put and delete (and their undo), so that no query of the
// turns repository scans every stored turn: a query costs what its run, key
// or station holds, whatever the store holds besides (the SQL repository
// has the same indexes, migration 0010).
type turnRows struct {
	rows map[string]turns.Turn
	// byRun: the ids of a run's turns; byStatus: of its turns in a status.
	byRun    map[string]map[string]struct{}
	byStatus map[runStatus]map[string]struct{}
	// byQueue: the ids of a queue's turns, of every run (analytics).
	byQueue map[string]map[string]struct{}
	// byKey: the turn of an account's idempotency key.
	byKey map[string]string
	// atStation: the CALLED or IN_SERVICE turn of a station.
	atStation map[string]string
	// byStation: the ids of every turn that names a station, whatever its
	// status (deleting the station unassigns them).
	byStation map[string]map[string]struct{}
	// byCode: the ids of a run's turns showing a display code.
	byCode map[string]map[string]struct{}
	// served: a queue's turns with a service time, in finishing order.
	served map[string][]served
}

type runStatus struct {
	run    string
	status turns.Status
}

type served struct {
	id      string
	seconds float64
	at      int64 // finishedAt, Unix nanoseconds
}

func newTurnRows() *turnRows {
	return &turnRows{rows: map[string]turns.Turn{}, byRun: map[string]map[string]struct{}{}, byQueue: map[string]map[string]struct{}{},
		byStatus: map[runStatus]map[string]struct{}{}, byKey: map[string]string{}, atStation: map[string]string{}, byStation: map[string]map[string]struct{}{},
		byCode: map[string]map[string]struct{}{}, served: map[string][]served{}}
}

func keyOf(accountID string, key *string) string { return accountID + "|" + *key }

func codeOf(runID, code string) string { return runID + "|" + code }

func addTo[K comparable](m map[K]map[string]struct{}, k K, id string) {
	set := m[k]
	if set == nil {
		set = map[string]struct{}{}
		m[k] = set
	}
	set[id] = struct{}{}
}

func removeFrom[K comparable](m map[K]map[string]struct{}, k K, id string) {
	if set := m[k]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(m, k)
		}
	}
}

// index adds t to the indexes.
func (tr *turnRows) index(t turns.Turn) {
	addTo(tr.byRun, t.RunID, t.ID)
	addTo(tr.byQueue, t.QueueID, t.ID)
	addTo(tr.byStatus, runStatus{t.RunID, t.Status}, t.ID)
	addTo(tr.byCode, codeOf(t.RunID, t.DisplayCode), t.ID)
	if t.IdempotencyKey != nil {
		tr.byKey[keyOf(t.AccountID, t.IdempotencyKey)] = t.ID
	}
	if t.StationID != nil && t.Status.AtStation() {
		tr.atStation[*t.StationID] = t.ID
	}
	if t.StationID != nil {
		addTo(tr.byStation, *t.StationID, t.ID)
	}
	if t.ServiceSeconds != nil && t.FinishedAt != nil {
		s := served{id: t.ID, seconds: *t.ServiceSeconds, at: t.FinishedAt.UnixNano()}
		list := tr.served[t.QueueID]
		// Services end in time order, so this is nearly always an append.
		i := len(list)
		for i > 0 && list[i-1].at > s.at {
			i--
		}
		tr.served[t.QueueID] = slices.Insert(list, i, s)
	}
}

// unindex removes t from the indexes.
func (tr *turnRows) unindex(t turns.Turn) {
	removeFrom(tr.byRun, t.RunID, t.ID)
	removeFrom(tr.byQueue, t.QueueID, t.ID)
	removeFrom(tr.byStatus, runStatus{t.RunID, t.Status}, t.ID)
	removeFrom(tr.byCode, codeOf(t.RunID, t.DisplayCode), t.ID)
	if t.IdempotencyKey != nil && tr.byKey[keyOf(t.AccountID, t.IdempotencyKey)] == t.ID {
		delete(tr.byKey, keyOf(t.AccountID, t.IdempotencyKey))
	}
	if t.StationID != nil && tr.atStation[*t.StationID] == t.ID {
		delete(tr.atStation, *t.StationID)
	}
	if t.StationID != nil {
		removeFrom(tr.byStation, *t.StationID, t.ID)
	}
	if t.ServiceSeconds != nil && t.FinishedAt != nil {
		list := tr.served[t.QueueID]
		if i := slices.IndexFunc(list, func(s served) bool { return s.id == t.ID }); i >= 0 {
			tr.served[t.QueueID] = slices.Delete(list, i, i+1)
		}
	}
}

// put inserts or replaces a row and returns its undo; must be called
// through Store.write.
func (tr *turnRows) put(t turns.Turn) func() {
	old, existed := tr.rows[t.ID]
	if existed {
		tr.unindex(old)
	}
	tr.rows[t.ID] = t
	tr.index(t)
	return func() {
		tr.unindex(t)
		if existed {
			tr.rows[t.ID] = old
			tr.index(old)
		} else {
			delete(tr.rows, t.ID)
		}
	}
}

// del deletes a row and returns its undo; must be called through
// Store.write.
func (tr *turnRows) del(id string) func() {
	old, existed := tr.rows[id]
	if !existed {
		return func() {}
	}
	tr.unindex(old)
	delete(tr.rows, id)
	return func() {
		tr.rows[id] = old
		tr.index(old)
	}
}

// of returns the rows with the given ids.
func (tr *turnRows) of(ids map[string]struct{}) map[string]turns.Turn {
	out := make(map[string]turns.Turn, len(ids))
	for id := range ids {
		out[id] = tr.rows[id]
	}
	return out
}

// ofQueue calls f with each turn of the queue, through byQueue; the
// caller holds the store's lock (analytics reads under its own).
func (tr *turnRows) ofQueue(queueID string, f func(turns.Turn)) {
	for id := range tr.byQueue[queueID] {
		f(tr.rows[id])
	}
}
