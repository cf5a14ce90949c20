// Package postgres implements the storage ports on PostgreSQL: bun (with
// pgdialect) over pgx's database/sql adapter, sharing one pgx pool with
// River. It owns the unit of work every repository joins, the bridge that
// lets River insert jobs in that same transaction, the migrations and the
// rate limiter.
package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/qms-dev/qms/ports"
)

// defaultMaxConns sizes the pool when the URL does not (pool_max_conns).
// bun, River's producers, its listener and its leader elector all draw on
// the one pool, so pgx's default (the number of CPUs, at least 4) is too
// tight on small machines. More is not better: PostgreSQL runs no more
// transactions at once than it has cores, and every connection past that
// is a backend waiting for a core while it holds a run's lock. On 2 cores
// a pool of 10 served 10 % more intakes than 20, with 10 % less of
// PostgreSQL's CPU each and a quarter lower p99, and no fewer reads or
// webhook deliveries (docs/decisions.md, "A pool of 10").
const defaultMaxConns = 10

// DB is a PostgreSQL database: one pgx pool, and bun on top of it.
type DB struct {
	// Bun runs SQL through database/sql on Pool. Repositories reach it
	// through IDB so they join the unit of work in their context.
	Bun *bun.DB
	// Pool is the pgx pool under Bun, for pgx-native users such as River.
	Pool *pgxpool.Pool
	// Logger, when set, hears what Migrate applies and every unit of work
	// run again after a conflict. Nil keeps it silent.
	Logger *slog.Logger

	// retries counts transactions Do ran again (see TxRetries).
	retries atomic.Int64
	// acquireTimeout is Options.AcquireTimeout.
	acquireTimeout time.Duration
	// views keeps queues' definitions and stations per version
	// (queueviews.go).
	views queueViews
	// viewBatches coalesces concurrent turn views (viewbatch.go).
	viewBatches *roundTrips[string, turnViewRow]
	// gates: intakes of one run wait for each other here (runGates).
	gates runGates
	// announcer tells listening processes of committed events
	// (announce.go).
	announcer *announcer
	// readOnlyAt is when discardReadOnly last reset the pool (unix nanos).
	readOnlyAt atomic.Int64
	// readOnlyResets counts those resets (ReadOnlyResets).
	readOnlyResets atomic.Int64
	// doomed holds the connections whose server refused a write
	// (*pgx.Conn keys), doomedN how many: the pool destroys them instead
	// of handing them out again (readonly.go).
	doomed  sync.Map
	doomedN atomic.Int64
}

// Options tune Open.
type Options struct {
	// MaxConns sizes the pool when the URL does not (pool_max_conns); zero
	// takes defaultMaxConns.
	MaxConns int32
	// AcquireTimeout bounds how long a unit of work waits for a connection
	// of the full pool before it fails with an error Unavailable
	// recognises (503); zero leaves only its context to bound it.
	AcquireTimeout time.Duration
	// Tracer, when set, sees every statement, batch and prepare the pool
	// sends (it may also implement pgx.BatchTracer and pgx.PrepareTracer).
	// Tests count the round trips a request costs with it.
	Tracer pgx.QueryTracer
}

// Open connects to the database at url (a postgres:// URL or a key=value
// DSN) and checks that it answers.
func Open(ctx context.Context, url string) (*DB, error) { return OpenWith(ctx, url, Options{}) }

// OpenWith is Open with options.
func OpenWith(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, parseError(err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = cmp.Or(opts.MaxConns, defaultMaxConns)
	}
	if !asksSessionAttrs(url) {
		// A standby, or a primary demoted under us, is never written to:
		// every new connection checks that its server takes writes, and
		// pgx moves on to the URL's next host when it does not.
		cfg.ConnConfig.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
	}
	db := &DB{acquireTimeout: opts.AcquireTimeout}
	ro := &readOnlyTracer{db: db}
	cfg.ConnConfig.Tracer = ro
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = multitracer.New(opts.Tracer, ro)
	}
	cfg.PrepareConn = db.prepareConn
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, startupError(cfg, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, startupError(cfg, err)
	}
	sqldb := sql.OpenDB(execConnector{stdlib.GetPoolConnector(pool)})
	// The pool keeps the idle connections (as stdlib.OpenDBFromPool sets).
	sqldb.SetMaxIdleConns(0)
	db.Bun, db.Pool = bun.NewDB(sqldb, pgdialect.New()), pool
	db.viewBatches = newRoundTrips(maxViewBatches(cfg.MaxConns), maxViewBatchSize, db.sendViews)
	// A turn id is the request's path (fiber's buffer, reused after the
	// handler returns): a view that waits keeps its own copy.
	db.viewBatches.keep = strings.Clone
	db.announcer = newAnnouncer(db)
	return db, nil
}

// Close releases every connection. Closing bun first lets database/sql hand
// its connections back before the pool shuts.
func (db *DB) Close() {
	db.announcer.close()
	_ = db.Bun.Close()
	db.Pool.Close()
}

// Ping reports whether the database answers and takes writes (GET
// /readyz): a server in recovery (a standby) or read-only answers with an
// error wrapping ports.ErrReadOnly, and its pooled connections are
// discarded, so the next ones look for a writable server.
func (db *DB) Ping(ctx context.Context) error {
	var readOnly string
	var recovery bool
	err := db.Pool.QueryRow(ctx, "SELECT current_setting('transaction_read_only'), pg_is_in_recovery()").Scan(&readOnly, &recovery)
	if errors.Is(err, pgconn.ErrReadOnlyConnection) {
		// No server at the URL's addresses takes writes.
		return fmt.Errorf("postgres: ping: %w: %w", ports.ErrReadOnly, err)
	}
	if err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	if readOnly == "on" || recovery {
		db.discardReadOnly()
		what := "read-only"
		if recovery {
			what = "in recovery (a standby)"
		}
		return fmt.Errorf("postgres: ping: the server is %s: %w", what, ports.ErrReadOnly)
	}
	return nil
}

// errOwnedTx is returned by the pgx.Tx bridge for the calls that would take
// the transaction away from the unit of work that owns it.
var errOwnedTx = errors.New("postgres: the transaction belongs to the unit of work; it commits or rolls back when Do returns")
