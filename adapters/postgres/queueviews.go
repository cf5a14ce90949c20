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
// never-reused) state of the queue's row and stations, so an entry can be
// used by any process whose statement read the same version: there is
// nothing to invalidate, and no stale read. The branch's time zone is read
// with the version each time (it lives on the entity) and resolved again
// when it differs from the entry's.
//
// Entries are shared: callers must not change what a returned queue's
// pointers and slices refer to (the use cases read them).
type queueViews struct {
	mu sync.RWMutex
	m  map[string]queueView
}

type queueView struct {
	version  int64
	tz       *string
	queue    queues.Queue
	stations []queues.Station
}

func (v *queueViews) get(queueID string, version int64, tz *string) (queues.Queue, []queues.Station, bool) {
	v.mu.RLock()
	e, ok := v.m[queueID]
	v.mu.RUnlock()
	if !ok || e.version != version {
		return queues.Queue{}, nil, false
	}
	if !sameZone(e.tz, tz) {
		e.tz, e.queue.BranchTimezone = tz, tz
		e.queue.ResolveZone()
		v.put(queueID, e)
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

func sameZone(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// queueViewSQL reads what queueViews keeps of a queue ($1): its version,
// row and stations, in one snapshot.
const queueViewSQL = `SELECT q.view_version, q.account_id, q.entity_id, q.name, q.type, q.doc, q.created_at,
	(SELECT coalesce(json_agg(json_build_object('id', s.id, 'account_id', s.account_id, 'queue_id', s.queue_id,
		'label', s.label, 'description', s.description, 'created_at', s.created_at) ORDER BY s.id), '[]')
	 FROM stations AS s WHERE s.queue_id = q.id)
FROM queues AS q WHERE q.id = $1`

// queueView returns the queue and stations at version (tz is its branch's
// time zone, read with the version): from the cache, or else read through
// q (the caller's unit of work, if any) and kept. The read may find a
// newer version than asked for (a change committed in between); that is
// the one returned, as a read of the queue at that moment would.
func (db *DB) queueView(ctx context.Context, q pgxQuerier, queueID string, version int64, tz *string) (queues.Queue, []queues.Station, error) {
	if qu, sts, ok := db.views.get(queueID, version, tz); ok {
		return qu, sts, nil
	}
	var (
		qr       queueRow
		ver      int64
		stations json.RawMessage
	)
	err := q.QueryRow(ctx, queueViewSQL, queueID).Scan(&ver, &qr.AccountID, &qr.EntityID, &qr.Name, &qr.Type, &qr.Doc, &qr.CreatedAt, &stations)
	if err != nil {
		return queues.Queue{}, nil, notFound(err, "queue", queueID)
	}
	qr.ID, qr.BranchTimezone = queueID, tz
	qu, err := qr.domain()
	if err != nil {
		return queues.Queue{}, nil, err
	}
	sts, err := decodeStations(stations, queueID)
	if err != nil {
		return queues.Queue{}, nil, err
	}
	db.views.put(queueID, queueView{version: ver, tz: tz, queue: qu, stations: sts})
	return qu, sts, nil
}
