package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
)

type txKey struct{}

// txState is one unit of work: a transaction on a pinned connection. The
// connection is pinned so WithPgxTx can reach the same backend (and so the
// same transaction) through sql.Conn.Raw. The transaction is opened and
// closed by statements of the unit's own (BEGIN travels with the unit's
// first statement, COMMIT with its last deferred writes: deferred.go), not
// by database/sql, so each costs no round trip of its own.
type txState struct {
	db   *DB
	conn bun.Conn

	mu          sync.Mutex
	afterCommit []func()
	folded      folded
	// deferred writes wait for the next statement (deferred.go);
	// deferredErr is the first one's failure, the unit's error; begun is
	// set once BEGIN has left.
	deferred    []deferredWrite
	deferredErr error
	begun       bool
	// member is the request context of the intake chain member running
	// now (intakechain.go), nil outside one: its statements run shielded
	// from it, and none is sent once it has ended.
	member context.Context
}

// memberEnded is the error of a statement a chain member would send after
// its request's context ended (nil while it lives, or outside a chain).
func (st *txState) memberEnded() error {
	if st.member == nil || st.member.Err() == nil {
		return nil
	}
	return memberEndedError(st.member, nil)
}

func (db *DB) txFrom(ctx context.Context) *txState {
	if st, ok := ctx.Value(txKey{}).(*txState); ok && st.db == db {
		return st
	}
	return nil
}

// InTx reports whether ctx carries a unit of work of this database.
func (db *DB) InTx(ctx context.Context) bool { return db.txFrom(ctx) != nil }

// IDB returns the transaction of the unit of work in ctx, or the database
// itself outside one (each statement then commits on its own). Every
// repository runs its queries on it, which is how they join the use case's
// transaction without knowing about it.
func (db *DB) IDB(ctx context.Context) bun.IDB {
	if st := db.txFrom(ctx); st != nil {
		// bun's statement must see the deferred writes. A failure is
		// recorded (Do returns it); the statement then fails in the aborted
		// transaction.
		_ = db.flushDeferredNow(ctx, st)
		return st.conn
	}
	return db.Bun
}

// Do runs fn in one transaction: committed when fn returns nil, rolled back
// when it returns an error (returned as is, so domain errors keep their
// identity) or panics (the panic goes on after the rollback). A nested Do
// joins the outer transaction. Hooks registered with AfterCommit run once
// the commit succeeded.
//
// A transaction that fails with a serialization failure or a deadlock
// (SQLSTATE 40001, 40P01) is run again whole, up to maxTxAttempts times
// with a jittered pause: the lock order of docs/turns.md rules deadlocks
// out by construction, and this is the second line of defence, so a client
// never sees a 500 for a conflict the database resolved by killing one
// side. fn must be safe to run again (use cases are: they read everything
// they decide on inside the transaction).
func (db *DB) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if db.txFrom(ctx) != nil {
		return fn(ctx)
	}
	return db.retrying(ctx, func() error { return db.do(ctx, fn) })
}

// retrying runs attempt, a whole transaction, again while it fails with a
// conflict running it again can cure (retryable), at most maxTxAttempts
// times, with a pause between.
func (db *DB) retrying(ctx context.Context, attempt func() error) error {
	for n := 1; ; n++ {
		err := attempt()
		code, ok := retryable(err)
		if !ok || n >= maxTxAttempts {
			return err
		}
		db.retries.Add(1)
		if db.Logger != nil {
			// Loud on purpose: the lock order of docs/turns.md should make
			// this never happen, and the history checker counts these lines.
			db.Logger.Warn("postgres: unit of work failed with a retryable conflict; running it again",
				"sqlstate", code, "attempt", n)
		}
		if werr := sleepCtx(ctx, txRetryPause(n)); werr != nil {
			return err
		}
	}
}

// maxTxAttempts bounds how often Do runs a transaction that keeps failing
// with a serialization failure or deadlock.
const maxTxAttempts = 5

// retryable reports whether err is a transaction failure that running the
// transaction again can cure, and its SQLSTATE: a serialization failure or
// a deadlock, or a change's webhook delivery to an endpoint whose deletion
// was still uncommitted when the deliveries went in. Their insert skips
// endpoints already gone (insertDeliveriesSQL), but the key's check of one
// being deleted waits for the deletion and fails once it commits; run
// again, the change no longer reads that endpoint, and the customer's turn
// is not refused for an administrator's removal of a webhook.
func retryable(err error) (string, bool) {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return "", false
	}
	switch {
	case pg.Code == "40001" || pg.Code == "40P01":
		return pg.Code, true
	case pg.Code == "23503" && pg.ConstraintName == deliveriesEndpointKey:
		return pg.Code, true
	}
	return "", false
}

// deliveriesEndpointKey is the foreign key of a webhook delivery to its
// endpoint (migration 0020).
const deliveriesEndpointKey = "webhook_deliveries_endpoint_id_fkey"

// txRetryPause is the pause before attempt+1: up to 2, 4, 8, 16 ms, drawn
// at random (full jitter), so the two sides of a deadlock do not meet
// again in step.
func txRetryPause(attempt int) time.Duration {
	ceiling := time.Millisecond << attempt
	return time.Duration(rand.Int64N(int64(ceiling))) + time.Millisecond/2
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TxRetries returns how many transactions Do has run again after a
// serialization failure or deadlock since the database was opened.
func (db *DB) TxRetries() int64 { return db.retries.Load() }

// errAcquire is the error of a unit of work that waited acquireTimeout for
// a connection of a full pool: requests queue for at most that long
// (answered 503, see Unavailable) instead of draining every client's
// patience behind a pool that cannot keep up.
var errAcquire = errors.New("postgres: no connection free in the pool within the acquire timeout")

// conn takes a connection for a unit of work, waiting at most
// acquireTimeout. The context only bounds the wait: database/sql does not
// keep it once the connection is handed over.
func (db *DB) conn(ctx context.Context) (bun.Conn, error) {
	if db.acquireTimeout <= 0 {
		return db.Bun.Conn(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, db.acquireTimeout)
	defer cancel()
	conn, err := db.Bun.Conn(actx)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return conn, fmt.Errorf("%w (%v): %w", errAcquire, db.acquireTimeout, err)
	}
	return conn, err
}

// beginWrites is a new unit's queue of deferred writes: its BEGIN, with
// room for what an intake queues before its first batch and its commit
// (the turn, the event, the line bump, a chain member's savepoint), so the
// queue does not grow three times on the way.
func beginWrites() []deferredWrite {
	ws := make([]deferredWrite, 1, 8)
	ws[0] = deferredWrite{sql: "begin", begin: true, mapErr: errBegin}
	return ws
}

func errBegin(err error) error { return fmt.Errorf("postgres: unit of work: begin: %w", err) }

// commitUnit sends COMMIT with the unit's last deferred writes, in one
// batch; a unit that sent nothing sends nothing.
func (db *DB) commitUnit(ctx context.Context, st *txState) error {
	st.mu.Lock()
	if !st.begun && len(st.deferred) == 1 && st.deferred[0].begin {
		st.deferred = nil
		st.mu.Unlock()
		return nil
	}
	st.deferred = append(st.deferred, deferredWrite{sql: "commit", commit: true, mapErr: func(err error) error {
		return fmt.Errorf("postgres: unit of work: commit: %w", err)
	}})
	st.mu.Unlock()
	return db.flushDeferredNow(ctx, st)
}

// rollbackUnit ends a unit that failed. When the rollback itself fails,
// the connection is closed, so the pool never hands out a connection left
// inside a transaction.
func (db *DB) rollbackUnit(ctx context.Context, st *txState) {
	st.mu.Lock()
	st.deferred = nil
	begun := st.begun
	st.mu.Unlock()
	if !begun {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	err := db.rawPgx(rctx, st, func(tx pgx.Tx) error {
		_, err := tx.Exec(rctx, "rollback")
		return err
	})
	if err != nil {
		_ = st.conn.Raw(func(driverConn any) error {
			if c, err := pgxConn(driverConn); err == nil {
				_ = c.Close(rctx)
			}
			return nil
		})
	}
}

// rollbackTimeout bounds a rollback, which runs even when the request's
// context has ended.
const rollbackTimeout = 5 * time.Second

// do is one attempt of Do.
func (db *DB) do(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	conn, err := db.conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: unit of work: get connection: %w", err)
	}
	// Closing the sql.Conn hands it back to the pool; deferred, it runs after
	// the rollback below (last in, first out). After a commit it is closed
	// before the hooks run, and this second Close is a no-op.
	defer func() { _ = conn.Close() }()
	st := &txState{db: db, conn: conn, deferred: beginWrites()}

	done := false
	defer func() {
		if done {
			return
		}
		// fn failed or panicked: a rollback error adds nothing useful to
		// fn's own error; the connection is then dropped (rollbackUnit).
		db.rollbackUnit(ctx, st)
	}()
	err = fn(context.WithValue(ctx, txKey{}, st))
	if err == nil {
		err = db.commitUnit(ctx, st)
	}
	if err != nil {
		// A deferred write's failure is the cause of whatever the statement
		// it travelled with made of it.
		st.mu.Lock()
		if st.deferredErr != nil {
			err = st.deferredErr
		}
		st.mu.Unlock()
		return err
	}
	done = true
	// Hooks may start units of work of their own: give the connection back
	// first.
	_ = conn.Close()
	st.mu.Lock()
	hooks := st.afterCommit
	st.afterCommit = nil
	st.mu.Unlock()
	for _, f := range hooks {
		f()
	}
	return nil
}

// AfterCommit registers f to run once the unit of work in ctx has
// committed, in registration order; never if it rolls back. Outside a unit
// of work f runs at once. Same contract as memory.Store.AfterCommit, for
// in-process side effects (cache invalidation, fan-out) that must not
// happen for a rolled-back change.
func (db *DB) AfterCommit(ctx context.Context, f func()) {
	st := db.txFrom(ctx)
	if st == nil {
		f()
		return
	}
	st.mu.Lock()
	st.afterCommit = append(st.afterCommit, f)
	st.mu.Unlock()
}
