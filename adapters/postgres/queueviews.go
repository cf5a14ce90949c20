package postgres

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/qms-dev/qms/core/queues"
)

// maxQueueViews bounds the cache; past it the cache starts again empty
// (a process serving more queues than this pays a read per miss).
const maxQueueViews = 10000

// queueViews keeps, per queue, its decoded definition and stations at one
// view_version (migration 0095), so the hot statements read a queue's
// version instead of its document and stations, and decode nothing.
//
// A version names one committed (or, inside a transaction, one
// never-reused) state of the queue's row, its stations and its branch's
// time zone (migrations 0095, 0097), so an entry can be used by any process
// whose statement read the same version: there is nothing to invalidate,
// and no stale read.
//
// Entries are shared: callers must not change what a returned queue's
// pointers and slices refer to (the use cases read them).
type queueViews struct {
	mu sync.RWMutex
	m  map[string]queueView
	// runs names each run's queue (a run never changes queue), for
	// latestOfRun.
	runs map[string]string
}

// putRun notes the queue of a run.
func (v *queueViews) putRun(runID, queueID string) {
	v.mu.RLock()
	known := v.runs[runID] == queueID
	v.mu.RUnlock()
	if known {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.runs == nil || len(v.runs) >= maxQueueViews {
		v.runs = make(map[string]string)
	}
	v.runs[runID] = queueID
}

// latestOfRun is the queue of a run at the last version read, whatever it
// was: a guess, for a caller that checks it against a version read later
// (turns.IntakeLocker).
func (v *queueViews) latestOfRun(runID string) (queues.Queue, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e, ok := v.m[v.runs[runID]]
	return e.queue, ok
}

type queueView struct {
	version  int64
	queue    queues.Queue
	stations []queues.Station
}

func (v *queueViews) get(queueID string, version int64) (queues.Queue, []queues.Station, bool) {
	v.mu.RLock()
	e, ok := v.m[queueID]
	v.mu.RUnlock()
	if !ok || e.version != version {
		return queues.Queue{}, nil, false
	}
	return e.queue, e.stations, true
}

func (v *queueViews) put(queueID string, e queueView) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxQueueViews {
		v.m = make(map[string]queueView)
	}
	// The last read wins, even over a higher version: a higher one may
	// have been read inside a transaction that then rolled back.
	v.m[queueID] = e
}

// queueViewSQL reads what queueViews keeps of a queue ($1): its version,
// row, branch time zone and stations, in one snapshot.
const queueViewSQL = `SELECT q.view_version, q.account_id, q.entity_id, q.name, q.type, q.doc, q.created_at,
	(SELECT e.doc->'location'->>'timezone' FROM entities AS e WHERE e.id = q.entity_id),
	(SELECT coalesce(json_agg(json_build_object('id', s.id, 'account_id', s.account_id, 'queue_id', s.queue_id,
		'label', s.label, 'description', s.description, 'created_at', s.created_at) ORDER BY s.id), '[]')
	 FROM stations AS s WHERE s.queue_id = q.id)
FROM queues AS q WHERE q.id = $1`

// queueAt returns the queue and its stations at version: from the cache,
// or else read through the unit of work in ctx, if any, and kept. The read
// may find a newer version than asked for (a change committed in between);
// that is the one returned, as a read of the queue at that moment would.
func (db *DB) queueAt(ctx context.Context, queueID string, version int64) (queues.Queue, []queues.Station, error) {
	if qu, sts, ok := db.views.get(queueID, version); ok {
		return qu, sts, nil
	}
	var (
		qr       queueRow
		ver      int64
		stations json.RawMessage
	)
	err := db.withPgx(ctx, func(q pgxQuerier) error {
		return q.QueryRow(ctx, queueViewSQL, queueID).Scan(&ver, &qr.AccountID, &qr.EntityID, &qr.Name, &qr.Type,
			&qr.Doc, &qr.CreatedAt, &qr.BranchTimezone, &stations)
	})
	if err != nil {
		return queues.Queue{}, nil, notFound(err, "queue", queueID)
	}
	qr.ID = queueID
	qu, err := qr.domain()
	if err != nil {
		return queues.Queue{}, nil, err
	}
	sts, err := decodeStations(stations, queueID)
	if err != nil {
		return queues.Queue{}, nil, err
	}
	db.views.put(queueID, queueView{version: ver, queue: qu, stations: sts})
	return qu, sts, nil
}
