package postgres

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// asksSessionAttrs reports whether the URL (or PGTARGETSESSIONATTRS) says
// which servers to accept: then that choice stands (target_session_attrs=any
// keeps a read-only server, for one). Otherwise Open asks for a writable
// one, as target_session_attrs=read-write would.
func asksSessionAttrs(url string) bool {
	return strings.Contains(url, "target_session_attrs") || os.Getenv("PGTARGETSESSIONATTRS") != ""
}

// readOnlyResetEvery is the least time between two pool resets for a
// read-only server: one write refused is enough to know, and the hundred
// refused with it need not reset the pool a hundred times.
const readOnlyResetEvery = time.Second

// discardReadOnly drops every pooled connection (those in use go when they
// are released): a write was refused because the server became read-only
// (a primary demoted to a standby under the same address, or
// default_transaction_read_only switched on), and the connections made
// before that would keep failing. New connections check that their server
// takes writes (Open), so they find the writable server when there is one
// at the URL's addresses, and fail as faults (503) while there is none.
func (db *DB) discardReadOnly() {
	now := time.Now().UnixNano()
	last := db.readOnlyAt.Load()
	if now-last < int64(readOnlyResetEvery) || !db.readOnlyAt.CompareAndSwap(last, now) {
		return
	}
	db.readOnlyResets.Add(1)
	if db.Logger != nil {
		db.Logger.Warn("postgres: the server is read-only (a standby, or read-only by configuration): its pooled connections are discarded, new ones look for a writable server")
	}
	if db.Pool != nil {
		// Not on the statement's goroutine: it still holds its connection.
		go func() {
			db.Pool.Reset()
			// Every connection marked so far goes with the reset (those in
			// use when they are released).
			db.doomed.Clear()
			db.doomedN.Store(0)
		}()
	}
}

// doom marks conn to be closed rather than handed out again (prepareConn):
// its server refused a write.
func (db *DB) doom(conn *pgx.Conn) {
	if conn != nil {
		db.doomed.Store(conn, struct{}{})
		db.doomedN.Add(1)
	}
}

// prepareConn is the pool's PrepareConn, run as a connection is acquired:
// one marked by doom is destroyed, and the pool hands out another. The
// common case (nothing marked) is one atomic load: AfterRelease would do
// the same at release, but costs every release a goroutine.
func (db *DB) prepareConn(_ context.Context, conn *pgx.Conn) (bool, error) {
	if db.doomedN.Load() == 0 {
		return true, nil
	}
	if _, doomed := db.doomed.LoadAndDelete(conn); doomed {
		db.doomedN.Add(-1)
		return false, nil
	}
	return true, nil
}

// ReadOnlyResets returns how often the pool was reset because its server
// had become read-only.
func (db *DB) ReadOnlyResets() int64 { return db.readOnlyResets.Load() }

// readOnlyTracer watches every statement's and batch's outcome for a write
// refused by a read-only server (SQLSTATE 25006), whoever sent it: bun's
// repositories, the unit of work's batches, River.
type readOnlyTracer struct{ db *DB }

var (
	_ pgx.QueryTracer = (*readOnlyTracer)(nil)
	_ pgx.BatchTracer = (*readOnlyTracer)(nil)
)

func (t *readOnlyTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (t *readOnlyTracer) TraceQueryEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if data.Err != nil && readOnly(data.Err) {
		t.db.doom(conn)
		t.db.discardReadOnly()
	}
}

func (t *readOnlyTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t *readOnlyTracer) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	if data.Err != nil && readOnly(data.Err) {
		t.db.doom(conn)
		t.db.discardReadOnly()
	}
}

func (t *readOnlyTracer) TraceBatchEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchEndData) {
	if data.Err != nil && readOnly(data.Err) {
		t.db.doom(conn)
		t.db.discardReadOnly()
	}
}
