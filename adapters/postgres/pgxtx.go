package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errRawPanic stands in for a panic inside sql.Conn.Raw; the panic itself is
// raised again once Raw has returned.
var errRawPanic = errors.New("postgres: panic inside the pgx bridge")

// WithPgxTx runs f with a pgx.Tx. Inside a unit of work the pgx.Tx is a
// view of the unit's own transaction (same connection, same transaction),
// so whatever f writes — River's InsertTx in particular — commits or rolls
// back with the use case; its Commit, Rollback and Begin are refused, since
// the unit of work owns the transaction. Outside one, f runs in a pgx
// transaction of its own, committed when f returns nil.
//
// f must not use bun or the unit of work's context for queries while it
// runs: the connection is held for f, and such a call would wait forever.
func (db *DB) WithPgxTx(ctx context.Context, f func(tx pgx.Tx) error) error {
	st := db.txFrom(ctx)
	if st == nil {
		return pgx.BeginFunc(ctx, db.Pool, f)
	}
	if err := st.memberEnded(); err != nil {
		return err
	}
	return db.rawPgx(ctx, st, func(tx pgx.Tx) error {
		// The unit's deferred writes go first: f's statements see them.
		if err := st.flushDeferred(ctx, tx); err != nil {
			return err
		}
		return f(tx)
	})
}

// rawPgx runs f with a pgx.Tx over the unit of work's own connection and
// transaction (see WithPgxTx).
func (db *DB) rawPgx(ctx context.Context, st *txState, f func(tx pgx.Tx) error) error {
	var (
		fErr     error
		panicked bool
		panicVal any
	)
	// database/sql waits forever for a transaction whose Raw callback
	// panicked or returned driver.ErrBadConn (it tries to close the
	// connection the transaction still holds). So the callback recovers
	// every panic and hands f's error out through fErr, never through its
	// own return value.
	rawErr := st.conn.Raw(func(driverConn any) (err error) {
		defer func() {
			if r := recover(); r != nil {
				panicked, panicVal = true, r
				err = errRawPanic
			}
		}()
		conn, err := pgxConn(driverConn)
		if err != nil {
			return err
		}
		fErr = f(bridgeTx{conn: conn})
		return nil
	})
	if panicked {
		panic(panicVal)
	}
	if rawErr != nil {
		return fmt.Errorf("postgres: pgx bridge: %w", rawErr)
	}
	return fErr
}

// bridgeTx is a pgx.Tx over a connection already inside a transaction that
// bun owns. Statements run on the connection, hence in that transaction.
type bridgeTx struct {
	conn *pgx.Conn
}

var _ pgx.Tx = bridgeTx{}

// Begin is refused: savepoints would have to be released in step with a
// transaction this type does not control.
func (bridgeTx) Begin(context.Context) (pgx.Tx, error) { return nil, errOwnedTx }

// Commit is refused: the unit of work commits when its function returns nil.
func (bridgeTx) Commit(context.Context) error { return errOwnedTx }

// Rollback is refused: the unit of work rolls back when its function
// returns an error.
func (bridgeTx) Rollback(context.Context) error { return errOwnedTx }

func (t bridgeTx) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	return t.conn.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

func (t bridgeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}

// LargeObjects is not supported: pgx.LargeObjects can only be built by pgx's
// own transactions, and its zero value panics when used.
func (bridgeTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t bridgeTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

func (t bridgeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, sql, args...)
}

func (t bridgeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}

func (t bridgeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t bridgeTx) Conn() *pgx.Conn { return t.conn }

// pgxQuerier is what the hot statements need of a pgx connection, pool or
// transaction.
type pgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// withPgx runs f with pgx on the unit of work's connection inside one, or
// on the pool outside one (no transaction of its own: a single read needs
// none). Statements sent this way carry parameters and run in pgx's cache
// statement mode, so PostgreSQL plans each text once per connection:
// bun's statements carry their values inline and are planned on every
// execution, which costs more than running the hot reads themselves
// (2.2 ms of planning against 0.2 ms of execution for a turn's view).
func (db *DB) withPgx(ctx context.Context, f func(q pgxQuerier) error) error {
	st := db.txFrom(ctx)
	if st == nil {
		return f(db.Pool)
	}
	if err := st.memberEnded(); err != nil {
		return err
	}
	// The first statement f sends carries the unit's deferred writes in
	// front of it, in one batch (deferred.go).
	return db.rawPgx(ctx, st, func(tx pgx.Tx) error { return f(batching{tx: tx, st: st}) })
}

// withPgxRows runs a query through withPgx and hands each row's Scan to
// each.
func (db *DB) withPgxRows(ctx context.Context, sql string, args []any, each func(scan func(...any) error) error) error {
	return db.withPgx(ctx, func(q pgxQuerier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows.Scan); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}
