package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
)

// StreamChannel is the NOTIFY channel on which the events table's trigger
// (migration 0050) announces each committed event.
const StreamChannel = "qms_events"

// StreamLog is the Postgres stream.Log: the events table read in (tx_id, id)
// order, where tx_id is the id of the transaction that wrote the event.
//
// Transaction ids are handed out when a transaction first writes, not when
// it commits, so a transaction that began earlier can commit an event with a
// smaller tx_id after a later one has committed. Read therefore returns only
// the events below the horizon: the oldest transaction of this database
// still running at the moment of the read (taken from the same snapshot as
// the rows), or, with none running, the next transaction id. Every
// transaction below it has committed or rolled back, so nothing can appear
// behind a position already read, whichever process wrote it. Transactions
// of other databases on the same server are recognised through
// pg_stat_activity and do not hold the horizon back, nor do the NOTIFY
// transactions of the announcers (announce.go), which write no event; one
// that cannot be placed (it ended in the meantime, or its database is not
// visible to this role) holds it back for that one read, which only delays.
type StreamLog struct{ db *DB }

// NewStreamLog builds the stream log on db.
func NewStreamLog(db *DB) *StreamLog { return &StreamLog{db: db} }

// horizonCTE computes h, the horizon of the statement's snapshot.
// pg_current_snapshot() returns the statement's active snapshot, the one
// its scan of events uses, so rows and horizon agree.
const horizonCTE = `WITH snap AS MATERIALIZED (SELECT pg_current_snapshot() AS s),
horizon AS MATERIALIZED (
    SELECT coalesce(
        (SELECT min(x) FROM snap, pg_snapshot_xip(snap.s) AS x
          WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                             WHERE a.backend_xid = x::xid
                               AND (a.datname <> current_database() OR a.application_name = '` + AnnouncerApplication + `'))),
        (SELECT pg_snapshot_xmax(s) FROM snap)) AS h)
`

// Head implements stream.Log: the horizon, with an empty id, so that every
// event of a transaction at or above it comes after.
func (l *StreamLog) Head(ctx context.Context, _ string) (stream.Position, error) {
	var h string
	if err := l.db.Pool.QueryRow(ctx, horizonCTE+`SELECT h::text FROM horizon`).Scan(&h); err != nil {
		return stream.Position{}, wrap(err, "stream head")
	}
	tx, err := strconv.ParseUint(h, 10, 64)
	if err != nil {
		return stream.Position{}, fmt.Errorf("postgres: stream head %q: %w", h, err)
	}
	return stream.Position{Tx: tx}, nil
}

// locateEventSQL finds account $1's event $2 by its primary key (the
// account a filter on the one row).
const locateEventSQL = `SELECT tx_id::text, occurred_at FROM events WHERE account_id = $1 AND id = $2`

// Locate implements stream.Log.
func (l *StreamLog) Locate(ctx context.Context, accountID, eventID string) (stream.Position, time.Time, bool, error) {
	var txText string
	var at time.Time
	err := l.db.Pool.QueryRow(ctx, locateEventSQL, accountID, eventID).Scan(&txText, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return stream.Position{}, time.Time{}, false, nil
	}
	if err != nil {
		return stream.Position{}, time.Time{}, false, wrap(err, "locate event")
	}
	tx, err := strconv.ParseUint(txText, 10, 64)
	if err != nil {
		return stream.Position{}, time.Time{}, false, fmt.Errorf("postgres: event %s tx_id %q: %w", eventID, txText, err)
	}
	return stream.Position{Tx: tx, ID: eventID}, at, true, nil
}

// Read implements stream.Log.
func (l *StreamLog) Read(ctx context.Context, accountID string, after stream.Position, limit int) ([]stream.Entry, bool, error) {
	if limit <= 0 {
		limit = stream.DefaultPageSize
	}
	rows, err := l.db.Pool.Query(ctx, horizonCTE+`
SELECT horizon.h::text, e.tx_id::text, e.id, e.name, e.queue_id, e.run_id, e.data, e.occurred_at
FROM horizon LEFT JOIN LATERAL (
    SELECT * FROM events
    WHERE account_id = $1 AND (tx_id, id) > ($2::text::xid8, $3) AND tx_id < horizon.h
    ORDER BY tx_id, id
    LIMIT $4) e ON true`,
		accountID, strconv.FormatUint(after.Tx, 10), after.ID, limit)
	if err != nil {
		return nil, false, wrap(err, "read stream")
	}
	defer rows.Close()
	var (
		out     []stream.Entry
		horizon string
	)
	for rows.Next() {
		var (
			txText, id, name, queueID, runID *string
			data                             []byte
			at                               *time.Time
		)
		if err := rows.Scan(&horizon, &txText, &id, &name, &queueID, &runID, &data, &at); err != nil {
			return nil, false, wrap(err, "read stream")
		}
		if id == nil {
			continue // the horizon alone: no event below it
		}
		tx, err := strconv.ParseUint(*txText, 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("postgres: event %s tx_id %q: %w", *id, *txText, err)
		}
		e := stream.Entry{Position: stream.Position{Tx: tx, ID: *id}}
		e.Event.ID, e.Event.AccountID, e.Event.Name, e.Event.OccurredAt = *id, accountID, *name, *at
		if queueID != nil {
			e.Event.QueueID = *queueID
		}
		if runID != nil {
			e.Event.RunID = *runID
		}
		e.Event.Data = data
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, wrap(err, "read stream")
	}
	if len(out) == limit {
		return out, false, nil // the caller reads again at once
	}
	// Caught up with the horizon: are committed events waiting above it?
	var pending bool
	err = l.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE account_id = $1 AND tx_id >= $2::text::xid8)`,
		accountID, horizon).Scan(&pending)
	if err != nil {
		return nil, false, wrap(err, "read stream")
	}
	return out, pending, nil
}

// StreamNotifier is the Postgres stream.Notifier: LISTEN on StreamChannel,
// on a connection of its own (outside the pool, so it never holds one of
// the pool's connections).
type StreamNotifier struct{ db *DB }

// NewStreamNotifier builds the notifier on db's connection settings.
func NewStreamNotifier(db *DB) *StreamNotifier { return &StreamNotifier{db: db} }

// Run implements stream.Notifier. It returns when ctx ends or the
// connection fails; the hub then calls it again, after waking every feed.
func (n *StreamNotifier) Run(ctx context.Context, wake func(accountID string)) error {
	conn, err := pgx.ConnectConfig(ctx, n.db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return wrap(err, "stream: connect to listen")
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+StreamChannel); err != nil {
		return wrap(err, "stream: listen")
	}
	// Events committed before LISTEN took effect sent no notification we
	// heard: every subscriber looks at the log once now.
	wake("")
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return wrap(err, "stream: wait for notification")
		}
		account, _, _ := strings.Cut(note.Payload, " ")
		if account != "" {
			wake(account)
		}
	}
}

// RecentCalls implements display.Calls: the run's last turn.called events,
// newest first (events_run_calls_idx, migration 0051).
func (l *StreamLog) RecentCalls(ctx context.Context, accountID, runID string, limit int) ([]platform.Event, error) {
	rows, err := l.db.Pool.Query(ctx, `SELECT id, name, queue_id, data, occurred_at FROM events
		WHERE run_id = $1 AND name = 'turn.called' AND account_id = $2 ORDER BY id DESC LIMIT $3`, runID, accountID, limit)
	if err != nil {
		return nil, wrap(err, "recent calls")
	}
	defer rows.Close()
	var out []platform.Event
	for rows.Next() {
		e := platform.Event{AccountID: accountID, RunID: runID}
		var queueID *string
		var data []byte
		if err := rows.Scan(&e.ID, &e.Name, &queueID, &data, &e.OccurredAt); err != nil {
			return nil, wrap(err, "recent calls")
		}
		if queueID != nil {
			e.QueueID = *queueID
		}
		e.Data = data
		out = append(out, e)
	}
	return out, wrap(rows.Err(), "recent calls")
}
