package postgres

import (
	"context"
	"errors"
	"fmt"

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
	link   bool // an intake chain member's savepoint (intakechain.go)
	// commit marks the unit's COMMIT: PostgreSQL answers a COMMIT in a
	// transaction an earlier error aborted with the tag ROLLBACK, not an
	// error, so its tag is read (errCommitRolledBack).
	commit bool
}

// errCommitRolledBack is a unit's COMMIT answered ROLLBACK: a statement
// of it failed and someone swallowed the error, and nothing committed. The
// unit fails (pgx's own Tx.Commit does the same), never answers success.
var errCommitRolledBack = errors.New("postgres: commit answered ROLLBACK: a statement of the transaction failed before it, nothing committed")

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
	if st.deferred == nil {
		// After a batch took them: an intake queues three more (the
		// turn, the event, the line bump) and the COMMIT or the next
		// member's savepoint.
		st.deferred = make([]deferredWrite, 0, 4)
	}
	st.deferred = append(st.deferred, deferredWrite{sql: sql, args: args, mapErr: mapErr})
	st.mu.Unlock()
	return nil
}

// takeDeferred empties the unit's queue.
func (st *txState) takeDeferred() []deferredWrite {
	st.mu.Lock()
	defer st.mu.Unlock()
	w := st.deferred
	st.deferred = nil
	if len(w) > 0 && w[0].begin {
		st.begun = true
	}
	return w
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
	br := q.SendBatch(ctx, queueWrites(ws, nil, 0))
	err := st.readDeferred(br, ws)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = st.failDeferred(fmt.Errorf("postgres: deferred writes: %w", cerr))
	}
	return err
}

// queueWrites is a batch of ws, then last when not nil, with room for
// more queries after them. Its queries are made in one allocation, where
// pgx.Batch.Queue makes one each (a unit's batches carry a handful: BEGIN,
// the deferred writes, a savepoint, the statement).
func queueWrites(ws []deferredWrite, last *pgx.QueuedQuery, more int) *pgx.Batch {
	n := len(ws)
	if last != nil {
		n++
	}
	qs := make([]pgx.QueuedQuery, n)
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, n, n+more)}
	for i, w := range ws {
		qs[i] = pgx.QueuedQuery{SQL: w.sql, Arguments: w.args}
	}
	if last != nil {
		qs[n-1] = *last
	}
	for i := range qs {
		b.QueuedQueries[i] = &qs[i]
	}
	return b
}

// readDeferred reads the results of ws, the head of br.
func (st *txState) readDeferred(br pgx.BatchResults, ws []deferredWrite) error {
	for _, w := range ws {
		tag, err := br.Exec()
		if err == nil && w.commit && tag.String() == "ROLLBACK" {
			err = errCommitRolledBack
		}
		if err != nil {
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
	br := b.tx.SendBatch(ctx, queueWrites(ws, &pgx.QueuedQuery{SQL: sql, Arguments: args}, 0))
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
		full := queueWrites(ws, nil, len(b.QueuedQueries))
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
	if err := st.memberEnded(); err != nil {
		return err
	}
	return db.rawPgx(ctx, st, func(tx pgx.Tx) error { return send(tx, st.takeDeferred(), st) })
}
