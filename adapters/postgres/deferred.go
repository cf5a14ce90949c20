package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A write whose outcome a use case needs only as "it worked" (a turn's
// insert or update) is not sent when it is made inside a unit of work: it
// waits in the unit's queue and goes out in one pgx batch with the next
// statement the unit sends through withPgx (the event's insert, the line
// version's bump), or on its own before any other statement (bun's,
// River's) and before the commit. Statements keep their order, so the lock
// order of docs/turns.md is unchanged; only the round trips fold (issue 16).
//
// A deferred write that fails fails the statement it travels with, and the
// unit of work returns the write's own error (mapped as the repository maps
// it: a duplicate idempotency key stays turns.ErrDuplicateKey), whatever
// the caller that happened to send it made of it.
type deferredWrite struct {
	sql    string
	args   []any
	mapErr func(error) error
	begin  bool // the unit's BEGIN
	// tables, when set, are the tables the write changes, the first its
	// own: the write may fuse with its neighbours (fuseWrites).
	tables []string
}

// deferWrite queues a write in the unit of work in ctx, or runs it now
// outside one.
func (db *DB) deferWrite(ctx context.Context, mapErr func(error) error, sql string, args ...any) error {
	st := db.txFrom(ctx)
	if st == nil {
		_, err := db.Pool.Exec(ctx, sql, args...)
		if err != nil {
			return mapErr(err)
		}
		return nil
	}
	st.mu.Lock()
	st.deferred = append(st.deferred, deferredWrite{sql: sql, args: args, mapErr: mapErr})
	st.mu.Unlock()
	return nil
}

// deferFusable is deferWrite for a write that may travel fused with its
// neighbours in one statement (fuseWrites): tables are the tables it
// changes, the first its own. Its sql has no dollar sign but its
// parameters', and starts with WITH only if it may end a fused statement.
func (db *DB) deferFusable(ctx context.Context, tables []string, mapErr func(error) error, sql string, args ...any) error {
	st := db.txFrom(ctx)
	if st == nil {
		return db.deferWrite(ctx, mapErr, sql, args...)
	}
	st.mu.Lock()
	st.deferred = append(st.deferred, deferredWrite{sql: sql, args: args, mapErr: mapErr, tables: tables})
	st.mu.Unlock()
	return nil
}

// takeDeferred empties the unit's queue, fused (fuseWrites).
func (st *txState) takeDeferred() []deferredWrite {
	st.mu.Lock()
	defer st.mu.Unlock()
	w := st.deferred
	st.deferred = nil
	if len(w) > 0 && w[0].begin {
		st.begun = true
	}
	return fuseWrites(w)
}

// fuseWrites joins each run of consecutive fusable writes into one
// statement of data-modifying CTEs: WITH w0 AS (turn's insert), w1 AS
// (event's insert) <line bump>. PostgreSQL then starts, runs and ends one
// executor, and binds one portal, where it did three (issue 30: executor
// start and end were about a fifth of its CPU under the intake).
//
// The parts of one statement share its snapshot and none sees the others'
// rows, so a run holds at most one write per table (a turn's insert and
// its update never fuse); a write led by WITH ends its run (its CTEs are
// joined to the run's). A part's failure fails the statement, and the
// error is mapped by the part whose table the error names, else by the
// first part. Statements that fail this way fail the unit all the same.
func fuseWrites(ws []deferredWrite) []deferredWrite {
	out := ws[:0:0]
	for i := 0; i < len(ws); {
		j := i
		if len(ws[i].tables) > 0 {
			seen := map[string]bool{}
			for j < len(ws) && len(ws[j].tables) > 0 && !seen[ws[j].tables[0]] {
				seen[ws[j].tables[0]] = true
				j++
				if strings.HasPrefix(ws[j-1].sql, "WITH ") {
					break
				}
			}
		}
		if j-i < 2 {
			out = append(out, ws[i])
			i++
			continue
		}
		out = append(out, fuse(ws[i:j]))
		i = j
	}
	return out
}

// paramRef is a statement's reference to its parameter.
var paramRef = regexp.MustCompile(`\$([0-9]+)`)

// fuse makes one statement of ws (two or more fusable writes, only the
// last led by WITH): each but the last a CTE of its own, parameters
// renumbered after the ones before.
func fuse(ws []deferredWrite) deferredWrite {
	var (
		b    strings.Builder
		args []any
	)
	b.WriteString("WITH ")
	for k, w := range ws {
		off := len(args)
		sql := paramRef.ReplaceAllStringFunc(w.sql, func(ref string) string {
			n, _ := strconv.Atoi(ref[1:])
			return "$" + strconv.Itoa(n+off)
		})
		args = append(args, w.args...)
		if k < len(ws)-1 {
			fmt.Fprintf(&b, "w%d AS (%s), ", k, sql)
			continue
		}
		if rest, ok := strings.CutPrefix(sql, "WITH "); ok {
			b.WriteString(rest)
		} else {
			// Strip the trailing ", " into the primary statement.
			s := b.String()
			b.Reset()
			b.WriteString(strings.TrimSuffix(s, ", "))
			b.WriteString(" ")
			b.WriteString(sql)
		}
	}
	parts := append([]deferredWrite(nil), ws...)
	return deferredWrite{sql: b.String(), args: args, mapErr: func(err error) error {
		var pg *pgconn.PgError
		if errors.As(err, &pg) {
			for _, w := range parts {
				if slices.Contains(w.tables, pg.TableName) {
					return w.mapErr(err)
				}
			}
		}
		return parts[0].mapErr(err)
	}}
}

// failDeferred records the first deferred write's failure, which Do returns.
func (st *txState) failDeferred(err error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.deferredErr == nil {
		st.deferredErr = err
	}
	return st.deferredErr
}

// flushDeferred sends the queued writes as one batch on q (one round
// trip), or nothing when there are none.
func (st *txState) flushDeferred(ctx context.Context, q interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}) error {
	ws := st.takeDeferred()
	if len(ws) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, w := range ws {
		b.Queue(w.sql, w.args...)
	}
	br := q.SendBatch(ctx, b)
	err := st.readDeferred(br, ws)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = st.failDeferred(fmt.Errorf("postgres: deferred writes: %w", cerr))
	}
	return err
}

// readDeferred reads the results of ws, the head of br.
func (st *txState) readDeferred(br pgx.BatchResults, ws []deferredWrite) error {
	for _, w := range ws {
		if _, err := br.Exec(); err != nil {
			return st.failDeferred(w.mapErr(err))
		}
	}
	return nil
}

// flushDeferredNow sends the queued writes on the unit's connection before
// a statement that does not go through withPgx.
func (db *DB) flushDeferredNow(ctx context.Context, st *txState) error {
	st.mu.Lock()
	n := len(st.deferred)
	st.mu.Unlock()
	if n == 0 {
		return nil
	}
	return db.rawPgx(ctx, st, func(tx pgx.Tx) error { return st.flushDeferred(ctx, tx) })
}

// batching is the querier withPgx hands out inside a unit of work: the
// first statement carries the queued writes in front of it, in one batch.
type batching struct {
	tx pgx.Tx
	st *txState
}

// send queues the unit's deferred writes and sql in one batch and reads
// the writes' results; ok false when there were none to send.
func (b batching) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, bool, error) {
	ws := b.st.takeDeferred()
	if len(ws) == 0 {
		return nil, false, nil
	}
	batch := &pgx.Batch{}
	for _, w := range ws {
		batch.Queue(w.sql, w.args...)
	}
	batch.Queue(sql, args...)
	br := b.tx.SendBatch(ctx, batch)
	if err := b.st.readDeferred(br, ws); err != nil {
		_ = br.Close()
		return nil, true, err
	}
	return br, true, nil
}

func (b batching) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br, ok, err := b.send(ctx, sql, args)
	if !ok {
		return b.tx.Exec(ctx, sql, args...)
	}
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	return tag, errors.Join(err, br.Close())
}

func (b batching) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	br, ok, err := b.send(ctx, sql, args)
	if !ok {
		return b.tx.QueryRow(ctx, sql, args...)
	}
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (b batching) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, ok, err := b.send(ctx, sql, args)
	if !ok {
		return b.tx.Query(ctx, sql, args...)
	}
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// batchRow closes its batch once scanned.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows closes its batch with the rows.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// withPgxBatch sends b's queries in one batch, behind the unit's deferred
// writes inside a unit of work, and hands read the results of b's queries.
func (db *DB) withPgxBatch(ctx context.Context, b *pgx.Batch, read func(br pgx.BatchResults) error) error {
	send := func(q interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}, ws []deferredWrite, st *txState) error {
		full := &pgx.Batch{}
		for _, w := range ws {
			full.Queue(w.sql, w.args...)
		}
		full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
		br := q.SendBatch(ctx, full)
		if st != nil {
			if err := st.readDeferred(br, ws); err != nil {
				_ = br.Close()
				return err
			}
		}
		err := read(br)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	}
	st := db.txFrom(ctx)
	if st == nil {
		return send(db.Pool, nil, nil)
	}
	return db.rawPgx(ctx, st, func(tx pgx.Tx) error { return send(tx, st.takeDeferred(), st) })
}
