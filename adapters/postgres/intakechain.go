package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/qms-dev/qms/core/turns"
	"github.com/uptrace/bun"
)

// Group commit of a run's intakes (issue 30, docs/scaling.md "Issue 30,
// third session: group commit"). An intake that is about to commit while
// another intake of the same run waits at the run's gate in this process
// does not commit: it hands its still-open transaction, its deferred
// writes still queued, to the waiter, which runs its own unit inside it.
// The waiter's first batch carries the previous member's writes in front
// of its own lock, so it sees them (the key, the draw, the line); the last
// member commits once for all. Every member answers only with that
// commit's outcome, and its AfterCommit hooks run only after it
// succeeded, in the members' order.
//
// Each member after the first opens with a savepoint (queued, so it
// travels with the member's first statement: no round trip). A member that
// fails fails alone: its unsent writes are dropped and, when something of
// it was sent, a ROLLBACK TO the savepoint (queued too) undoes it, valid
// even in a transaction its failure aborted. A failure the savepoint
// cannot undo (a deferred write that failed, which may be an earlier
// member's, a failed commit) rolls the whole group back, and every member
// runs again alone, in a transaction of its own (errRerunAlone): none
// answers success for a write that did not commit.
//
// The chain holds the run's row lock from its first member's lock to its
// commit; the run's lock is the only lock a member adds, and always the
// same run, so the lock order of docs/turns.md is unchanged.

// maxChainMembers bounds a chain, maxChainAge its age (since its first
// member finished its work) when a member would hand it on: the first
// member's answer waits for the whole chain. Each
// member past the first takes a subtransaction XID (its draw writes inside
// the savepoint); PostgreSQL caches 64 per backend before every snapshot
// must look the rest up in pg_subtrans, so the cap stays well under that.
var (
	maxChainMembers = 16
	maxChainAge     = 5 * time.Millisecond
)

// errRerunAlone is the outcome of a chain that rolled back for a reason
// no savepoint could undo: each member runs again in a unit of its own.
var errRerunAlone = errors.New("postgres: intake chain rolled back; run again alone")

// intakeChain is one transaction shared by intakes of a run.
type intakeChain struct {
	db    *DB
	runID string
	gate  *runGate
	st    *txState
	conn  bun.Conn
	// pg is conn's PostgreSQL connection, for cancel requests, once one
	// was needed.
	pg *pgconn.PgConn
	// cancelTimer sends the cancel request at the running member's
	// deadline (cancelAtDeadline), cancelArmed while it watches one;
	// cancelling counts the request under way.
	cancelTimer *time.Timer
	cancelArmed bool
	cancelling  sync.WaitGroup
	started     time.Time // when the first member finished
	// alone: the chain is a member's rerun after a group rollback, never
	// handed on.
	alone bool
	// members counts the members whose writes the transaction holds;
	// hooks are their AfterCommit hooks in order; carry is what the last
	// of them returned, handed to the next.
	members int
	hooks   []func()
	carry   any
	// done is closed once the chain committed or rolled back; err is the
	// outcome then.
	done chan struct{}
	err  error
}

// IntakeChainStats is what the intake chains did since the database was
// opened: members that ran in an earlier member's transaction, members
// that failed alone there, and members run again alone after a group
// rollback.
type IntakeChainStats struct{ Joined, FailedAlone, Reruns int64 }

// IntakeChainStats reports the intake chains' counts.
func (db *DB) IntakeChainStats() IntakeChainStats {
	s := &db.gates.stats
	return IntakeChainStats{Joined: s.joined.Load(), FailedAlone: s.failedAlone.Load(), Reruns: s.reruns.Load()}
}

// RunIntake runs fn, an intake of the run, behind the run's gate, in a
// transaction it may share with the intakes of the run that came before
// or after it in this process (see above). carry is what the previous
// member returned, nil for a transaction's first.
func (r *Turns) RunIntake(ctx context.Context, runID string, fn func(ctx context.Context, carry any) (any, error)) error {
	db := r.db
	if db.txFrom(ctx) != nil {
		// Inside a caller's unit of work: its transaction, as Do would.
		leave, err := db.gates.enter(ctx, runID)
		if err != nil {
			return err
		}
		defer leave()
		_, err = fn(ctx, nil)
		return err
	}
	alone := false
	return db.retrying(ctx, func() error {
		err := db.intakeOnce(ctx, runID, fn, alone)
		if errors.Is(err, errRerunAlone) && !alone {
			// The chain it was in rolled back: once more, alone, which
			// does not count as an attempt.
			db.gates.stats.reruns.Add(1)
			alone = true
			err = db.intakeOnce(ctx, runID, fn, alone)
		}
		return err
	})
}

// intakeOnce is one attempt of RunIntake: as the first member of a new
// transaction, or as a member of the chain the gate hands it.
func (db *DB) intakeOnce(ctx context.Context, runID string, fn func(context.Context, any) (any, error), alone bool) error {
	gate, c, err := db.gates.wait(ctx, runID, !alone)
	if c != nil {
		if err != nil {
			// Handed the chain as its context ended: it runs nothing.
			c.member(ctx, func(context.Context, any) (any, error) { return nil, err })
			return err
		}
		return c.member(ctx, fn)
	}
	if err != nil {
		return err
	}
	conn, err := db.conn(ctx)
	if err != nil {
		db.gates.release(runID, gate)
		return fmt.Errorf("postgres: unit of work: get connection: %w", err)
	}
	st := &txState{db: db, conn: conn, deferred: beginWrites()}
	c = &intakeChain{db: db, runID: runID, gate: gate, st: st, conn: conn, alone: alone, done: make(chan struct{})}
	return c.first(ctx, fn)
}

// first runs the chain's first member: its failure is the transaction's.
func (c *intakeChain) first(ctx context.Context, fn func(context.Context, any) (any, error)) (err error) {
	st := c.st
	ok := false
	defer func() {
		if ok {
			return
		}
		c.db.rollbackUnit(ctx, st)
		_ = c.conn.Close()
		c.db.gates.release(c.runID, c.gate)
	}()
	carry, err := fn(context.WithValue(ctx, txKey{}, st), nil)
	st.mu.Lock()
	if st.deferredErr != nil {
		err = st.deferredErr
	}
	hooks := st.afterCommit
	st.afterCommit = nil
	st.mu.Unlock()
	if err != nil {
		return err
	}
	ok = true
	c.members, c.hooks, c.carry = 1, hooks, carry
	c.started = time.Now() // the first member's answer waits from here
	return c.next(ctx, true)
}

// member runs fn as a later member of the chain, inside its transaction
// and behind a savepoint, then hands the chain on or commits it. A failure
// of fn is fn's alone unless the savepoint cannot undo it.
func (c *intakeChain) member(ctx context.Context, fn func(context.Context, any) (any, error)) error {
	st := c.st
	c.db.gates.stats.joined.Add(1)
	st.mu.Lock()
	// What earlier members folded was read for them; this member reads
	// its own (the run's lock statement reads it all again).
	st.folded = folded{}
	mark := len(st.deferred)
	st.deferred = append(st.deferred, deferredWrite{sql: "savepoint qms_link", link: true, mapErr: func(err error) error {
		return fmt.Errorf("postgres: intake chain: savepoint: %w", err)
	}})
	st.afterCommit = nil
	st.mu.Unlock()

	// Its statements run on the chain's connection, so they must not end
	// with its request: pgx closes a connection whose statement it
	// abandons, under every member. Its request's end (the deadline, a
	// client gone) stops it all the same, as it would a unit of its own: a
	// cancel request stops its statement in flight (PostgreSQL ignores one
	// that arrives between statements), no statement of it is sent
	// afterwards (txState.memberEnded), and it then fails alone, undone by
	// its savepoint, with its context's error (503, Unavailable).
	if c.pg == nil {
		// Taken now: sql.Conn.Raw waits for the statement in flight.
		_ = c.conn.Raw(func(driverConn any) error {
			conn, err := pgxConn(driverConn)
			if err == nil {
				c.pg = conn.PgConn()
			}
			return err
		})
	}
	st.member = ctx
	c.cancelAtDeadline(ctx)
	carry, panicked, err := runMember(context.WithoutCancel(ctx), st, fn, c.carry)
	c.stopCancel()
	st.member = nil
	if ctx.Err() != nil && panicked == nil {
		err = memberEndedError(ctx, err)
	}
	st.mu.Lock()
	hooks := st.afterCommit
	st.afterCommit = nil
	derr := st.deferredErr
	st.mu.Unlock()
	if derr != nil || panicked != nil {
		// A deferred write failed (perhaps an earlier member's, sent with
		// this member's statements): the transaction is lost.
		c.finish(ctx, errRerunAlone, false)
		if panicked != nil {
			panic(panicked)
		}
		return errRerunAlone
	}
	if err != nil {
		c.db.gates.stats.failedAlone.Add(1)
		st.mu.Lock()
		if len(st.deferred) > mark && st.deferred[mark].link {
			st.deferred = st.deferred[:mark] // nothing of it was sent
		} else {
			st.deferred = []deferredWrite{{sql: "rollback to savepoint qms_link", mapErr: func(err error) error {
				return fmt.Errorf("postgres: intake chain: rollback to savepoint: %w", err)
			}}}
		}
		st.folded = folded{}
		st.mu.Unlock()
		if c.pg == nil || c.pg.TxStatus() == 'E' {
			// Its failure aborted the transaction: the ROLLBACK TO goes
			// now, alone, since pgx could not prepare the next member's
			// statements behind it in an aborted transaction. A failure
			// here is the chain's (deferredErr): its next member or its
			// commit sinks it.
			_ = c.db.flushDeferredNow(context.WithoutCancel(ctx), st)
		}
		_ = c.next(ctx, false)
		return err
	}
	c.members++
	c.hooks = append(c.hooks, hooks...)
	c.carry = carry
	return c.next(ctx, true)
}

// memberEndedError is the failure of a chain member whose request's
// context ended, with what it failed with (nil: it ended between
// statements).
func memberEndedError(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ctx.Err()) {
		return fmt.Errorf("postgres: intake chain: the request ended: %w", ctx.Err())
	}
	return fmt.Errorf("postgres: intake chain: the request ended: %w (%w)", ctx.Err(), err)
}

// cancelAtDeadline sends cancelStatement at ctx's deadline, if it has one,
// until stopCancel, which returns once a cancel request under way has been
// sent (before anything of the next member is). A request's context ends
// by its deadline while its handler runs, and one timer for the chain,
// reset per member, costs less than context.AfterFunc, which under a
// context of the request's own type starts a goroutine per member; a
// context ended otherwise still fails the member once its function
// returns.
func (c *intakeChain) cancelAtDeadline(ctx context.Context) {
	deadline, ok := ctx.Deadline()
	if !ok || !time.Now().Before(deadline) {
		// Past it already: none of its pgx statements is sent
		// (txState.memberEnded), so there is nothing to cancel.
		return
	}
	c.cancelling.Add(1) // done by the timer's function or by stopCancel
	if c.cancelTimer == nil {
		c.cancelTimer = time.AfterFunc(time.Until(deadline), func() {
			defer c.cancelling.Done()
			c.cancelStatement()
		})
	} else {
		c.cancelTimer.Reset(time.Until(deadline))
	}
	c.cancelArmed = true
}

// stopCancel ends cancelAtDeadline's watch.
func (c *intakeChain) stopCancel() {
	if !c.cancelArmed {
		return
	}
	c.cancelArmed = false
	if c.cancelTimer.Stop() {
		c.cancelling.Done()
	}
	c.cancelling.Wait()
}

// cancelStatementTimeout bounds the cancel request of a chain member whose
// request ended.
const cancelStatementTimeout = 2 * time.Second

// cancelStatement asks PostgreSQL to cancel the statement the chain's
// connection runs, if any (a member's, whose request ended). It opens a
// connection of its own, as a cancel request does; safe while a statement
// runs on the chain's.
func (c *intakeChain) cancelStatement() {
	if c.pg == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelStatementTimeout)
	defer cancel()
	_ = c.pg.CancelRequest(ctx)
}

// runMember runs fn in the chain's transaction, catching a panic so the
// chain can be rolled back before it goes on.
func runMember(ctx context.Context, st *txState, fn func(context.Context, any) (any, error), carry any) (out, panicked any, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	out, err = fn(context.WithValue(ctx, txKey{}, st), carry)
	return out, nil, err
}

// next hands the chain on to the run's next waiting intake, within the
// caps, or commits it; a member whose own outcome rides on the commit
// (wait) then waits for it.
func (c *intakeChain) next(ctx context.Context, wait bool) error {
	if !c.alone && c.members < maxChainMembers && time.Since(c.started) < maxChainAge &&
		c.db.gates.handOn(c.gate, c) {
		if !wait {
			return nil
		}
		<-c.done
		return c.err
	}
	c.finish(ctx, c.commit(ctx), true)
	return c.err
}

// commit commits the chain's transaction, whatever the context of the
// member that happens to send it, or rolls it back.
func (c *intakeChain) commit(ctx context.Context) error {
	cctx := context.WithoutCancel(ctx)
	err := c.db.commitUnit(cctx, c.st)
	if err == nil {
		return nil
	}
	c.st.mu.Lock()
	if c.st.deferredErr != nil {
		err = c.st.deferredErr
	}
	c.st.mu.Unlock()
	if c.members > 1 && serverRefused(err) {
		// The server refused it, so nothing committed, and the cause may
		// be any member's write. Any other failure (the connection lost
		// with the COMMIT on its way) leaves the outcome unknown, and
		// every member answers with it, as a unit of its own would.
		return errRerunAlone
	}
	return err
}

// serverRefused reports whether err is PostgreSQL's answer (kept by the
// repositories' mapping or mapped to a duplicate key, or a COMMIT answered
// ROLLBACK because a member swallowed a statement's failure), not a lost
// connection.
func serverRefused(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) || errors.Is(err, turns.ErrDuplicateKey) || errors.Is(err, errCommitRolledBack)
}

// finish ends the chain with err (rolled back unless committed), gives the
// connection and the gate back, runs the members' hooks after a commit,
// and tells every waiting member.
func (c *intakeChain) finish(ctx context.Context, err error, committed bool) {
	if err != nil || !committed {
		c.db.rollbackUnit(context.WithoutCancel(ctx), c.st)
	}
	_ = c.conn.Close()
	c.db.gates.release(c.runID, c.gate)
	if err == nil && committed {
		for _, f := range c.hooks {
			f()
		}
	}
	c.err = err
	close(c.done)
}
