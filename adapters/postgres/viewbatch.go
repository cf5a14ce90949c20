package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Customers poll their turn (GET /turns/{id}), many at once. Each read is
// one short statement, and on a busy server most of what it costs, in
// qms and in PostgreSQL alike, is the round trip itself. The views read
// outside a unit of work go through roundTrips (roundtrip.go): while
// maxViewBatches reads (or batches of them) are on their way, the next
// ones wait, and go out together as one statement for all their turns
// (turnViewsSQL), on one connection, in one round trip, as soon as one of
// those returns. A read that finds a free slot goes out at once, alone, as
// before: a quiet server waits for nothing and sends what it sent before.
//
// Freshness is unchanged: a read waits only for a batch sent after it
// arrived, and the batch's statement takes its snapshot when it runs
// (read committed), after every request in it came in, so it sees every
// change committed before then, whichever process committed it
// (TestTurnViewsCoalescedStayFresh). Reads inside a unit of work are
// never batched: they belong to its transaction.

// viewCall is one turn view asked for: the turn's id in, its row out.
type viewCall = roundTripCall[string, turnViewRow]

// viewBatchTimeout bounds a batch, which runs on a context of its own
// (one caller giving up must not cancel the others' reads).
const viewBatchTimeout = 30 * time.Second

// maxViewBatchSize bounds a batch, so a burst is spread over the slots.
const maxViewBatchSize = 64

// maxViewBatches is how many turn-view round trips may be on their way at
// once from a pool of maxConns: two (one for a pool of fewer than eight,
// so that reads leave connections to the writes). A batch is one
// statement, which PostgreSQL runs for little more than a single view
// (turnViewsSQL), so what a view costs on both sides is mostly its share
// of a round trip: fewer slots make fewer, larger batches, and two are
// enough to keep a connection busy while the other's answer is read. A
// quarter of the pool (5 of 20) sent a read alone whenever one of five
// was free: on the P2 load (64 pollers), 5-6 views per round trip against
// 9-13 with two, and PostgreSQL 25-40 µs of CPU per GET against 16-27.
func maxViewBatches(maxConns int32) int {
	if maxConns < 8 {
		return 1
	}
	return 2
}

// turnView reads the turn id's view row (turnViewSQL): in the caller's
// unit of work if it has one, else coalesced with the reads asked for at
// the same time.
func (db *DB) turnView(ctx context.Context, id string) (turnViewRow, error) {
	if db.txFrom(ctx) != nil {
		var row turnViewRow
		err := db.withPgx(ctx, func(q pgxQuerier) error {
			rows, err := q.Query(ctx, turnViewSQL, id)
			if err != nil {
				return err
			}
			row, err = readTurnView(rows, id)
			return err
		})
		return row, err
	}
	return db.viewBatches.do(ctx, id)
}

// sendViews reads calls' views in one round trip and hands each its own
// (the send of db.viewBatches).
func (db *DB) sendViews(calls []*viewCall) {
	if len(calls) == 1 {
		// Alone: the statement on its own, under its caller's context.
		c := calls[0]
		rows, err := db.Pool.Query(c.ctx, turnViewSQL, c.in)
		if err != nil {
			c.err = err
			return
		}
		c.out, c.err = readTurnView(rows, c.in)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(calls[0].ctx), viewBatchTimeout)
	defer cancel()
	// One statement for the batch, each turn read once however many of
	// its readers are in it: PostgreSQL starts one executor and takes one
	// snapshot for all, where a pgx batch of one statement per view paid
	// both per view.
	ids := make([]string, 0, len(calls))
	for i, c := range calls {
		if !slices.ContainsFunc(calls[:i], func(o *viewCall) bool { return o.in == c.in }) {
			ids = append(ids, c.in)
		}
	}
	var (
		rows pgx.Rows
		err  error
	)
	if len(ids) == 1 {
		rows, err = db.Pool.Query(ctx, turnViewSQL, ids[0])
	} else {
		sql, n := turnViewsSQL(len(ids))
		args := make([]any, n)
		for i, id := range ids {
			args[i] = id
		}
		rows, err = db.Pool.Query(ctx, sql, args...)
	}
	if err != nil {
		for _, c := range calls {
			c.err = err
		}
		return
	}
	err = readTurnViews(rows, calls, len(ids) == 1)
	if err != nil {
		// A reader already answered keeps its row (read from the one
		// snapshot); the others did not learn whether their turn exists.
		for _, c := range calls {
			if errors.Is(c.err, pgx.ErrNoRows) {
				c.err = err
			}
		}
	}
}

// readTurnViews decodes rows, of turnViewSQL when oneID (every call asks
// for its turn) else of turnViewsSQL, into the calls that asked for each
// row's turn, and closes them. A call whose turn has no row gets
// pgx.ErrNoRows. Each call decodes its own copy: a view is its caller's to
// change.
func readTurnViews(rows pgx.Rows, calls []*viewCall, oneID bool) error {
	defer rows.Close()
	for _, c := range calls {
		c.err = pgx.ErrNoRows
	}
	for rows.Next() {
		fields, vals := rows.FieldDescriptions(), rows.RawValues()
		if !oneID {
			if len(fields) == 0 || fields[0].DataTypeOID != pgtype.TextOID || fields[0].Format != pgtype.TextFormatCode ||
				vals[0] == nil {
				return errors.New("postgres: turn views: the first column is not the turn's id as text")
			}
		}
		for _, c := range calls {
			switch {
			case oneID:
				c.out, c.err = decodeTurnView(c.in, fields, vals)
			case c.in == string(vals[0]):
				c.out, c.err = decodeTurnView(c.in, fields[1:], vals[1:])
			}
		}
	}
	rows.Close()
	return rows.Err()
}

// readTurnView decodes the one row of turnViewSQL in rows and closes them;
// pgx.ErrNoRows when there is none.
func readTurnView(rows pgx.Rows, id string) (turnViewRow, error) {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return turnViewRow{}, err
		}
		return turnViewRow{}, pgx.ErrNoRows
	}
	row, err := decodeTurnView(id, rows.FieldDescriptions(), rows.RawValues())
	if err != nil {
		return turnViewRow{}, err
	}
	rows.Close()
	return row, rows.Err()
}
