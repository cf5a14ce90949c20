package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Customers poll their turn (GET /turns/{id}), many at once. Each read is
// one short statement, and on a busy server most of what it costs, in
// qms and in PostgreSQL alike, is the round trip itself: a write and a
// read on each side, a backend woken, a transaction begun and ended.
// viewBatches coalesces the reads that arrive together: while
// maxViewBatches reads (or batches of them) are on their way, the next
// ones wait, and go out together as one pgx batch, on one connection, in
// one round trip, as soon as one of those returns. A read that finds a
// free slot goes out at once, alone, as before: a quiet server waits for
// nothing and sends what it sent before.
//
// Freshness is unchanged: a read waits only for a batch sent after it
// arrived, and each statement of a batch takes its snapshot when it runs
// (read committed), after the request came in, so it sees every change
// committed before then, whichever process committed it
// (TestTurnViewsCoalescedStayFresh). Reads inside a unit of work are
// never batched: they belong to its transaction.
type viewBatches struct {
	// slots is maxViewBatches, set when the pool is made.
	slots    int
	mu       sync.Mutex
	waiting  []*viewCall
	inflight int
	// coalesced counts the views read in a batch with others (tests).
	coalesced atomic.Int64
}

// viewCall is one turn view asked for.
type viewCall struct {
	ctx  context.Context
	id   string
	done chan struct{}
	row  turnViewRow
	err  error
}

// viewBatchTimeout bounds a batch, which runs on a context of its own
// (one caller giving up must not cancel the others' reads).
const viewBatchTimeout = 30 * time.Second

// maxViewBatchSize bounds a batch, so a burst is spread over the slots.
const maxViewBatchSize = 64

// maxViewBatches is how many turn-view round trips may be on their way at
// once from a pool of maxConns: a quarter of it, at least two, so the
// batches leave connections to the writes.
func maxViewBatches(maxConns int32) int { return max(2, int(maxConns)/4) }

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
	c := &viewCall{ctx: ctx, id: id, done: make(chan struct{})}
	b := &db.viewBatches
	b.mu.Lock()
	b.waiting = append(b.waiting, c)
	if b.inflight < b.slots {
		// A free slot: this caller sends what waits, itself included
		// (unless its context has ended already), and hands the slot on.
		b.inflight++
		calls := b.takeLocked()
		b.mu.Unlock()
		db.sendViews(calls)
		db.nextViews()
	} else {
		b.mu.Unlock()
	}
	select {
	case <-c.done:
		return c.row, c.err
	default:
	}
	select {
	case <-c.done:
		return c.row, c.err
	case <-ctx.Done():
		// Left behind in the queue: the batch that takes it skips it
		// (takeLocked), or reads it for nobody.
		return turnViewRow{}, ctx.Err()
	}
}

// takeLocked returns the next waiting calls, up to maxViewBatchSize, and
// drops those whose caller has gone on the way: none returned means none
// waits.
func (b *viewBatches) takeLocked() []*viewCall {
	var out []*viewCall
	i := 0
	for ; i < len(b.waiting) && len(out) < maxViewBatchSize; i++ {
		if c := b.waiting[i]; c.ctx.Err() == nil {
			out = append(out, c)
		}
	}
	rest := copy(b.waiting, b.waiting[i:])
	clear(b.waiting[rest:])
	b.waiting = b.waiting[:rest]
	return out
}

// nextViews sends what waited while a slot's round trip was out, from a
// goroutine of its own so that the caller that held the slot answers now;
// or frees the slot when nothing waits.
func (db *DB) nextViews() {
	b := &db.viewBatches
	b.mu.Lock()
	calls := b.takeLocked()
	if len(calls) == 0 {
		b.inflight--
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go func() {
		db.sendViews(calls)
		db.nextViews()
	}()
}

// sendViews reads calls' views in one round trip and hands each its own.
func (db *DB) sendViews(calls []*viewCall) {
	if len(calls) == 0 {
		return
	}
	defer func() {
		for _, c := range calls {
			close(c.done)
		}
	}()
	if len(calls) == 1 {
		// Alone: the statement on its own, under its caller's context.
		c := calls[0]
		rows, err := db.Pool.Query(c.ctx, turnViewSQL, c.id)
		if err != nil {
			c.err = err
			return
		}
		c.row, c.err = readTurnView(rows, c.id)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(calls[0].ctx), viewBatchTimeout)
	defer cancel()
	batch := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(calls))}
	for _, c := range calls {
		batch.Queue(turnViewSQL, c.id)
	}
	db.viewBatches.coalesced.Add(int64(len(calls)))
	br := db.Pool.SendBatch(ctx, batch)
	for _, c := range calls {
		rows, err := br.Query()
		if err != nil {
			c.err = err
			continue
		}
		c.row, c.err = readTurnView(rows, c.id)
	}
	// Every call has its row or its error by now; a failure to close
	// (the connection lost after the last result) changes none of them.
	_ = br.Close()
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
