package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// deliveryReads coalesces the attempts' reads of their delivery and
// endpoint (GetDeliveryToSend) that arrive together (issue 30). River hands
// a process's workers their jobs in fetched batches, so at a few thousand
// deliveries a second dozens of attempts ask for their row within the same
// millisecond; each read alone was a round trip, a backend woken and an
// implicit transaction, which on a small machine cost more than the read.
// While maxDeliveryReadBatches round trips are out, the next reads wait and
// go out together as one pgx batch when one returns; a read that finds a
// slot free goes out at once. A read waits only for a batch sent after it
// arrived, and each statement takes its snapshot when it runs, so it sees
// every change committed before the attempt asked.
//
// Every round trip, alone or shared, is BEGIN, the success batch's
// successIndexOnlySQL, the reads, COMMIT: on a small analyzed table
// PostgreSQL would plan the read as a sequential scan and keep that plan on
// the connection while the table grows (the success's own exposure, see
// successIndexOnlySQL). The transaction only reads: its commit writes no
// WAL.
type deliveryReads struct {
	mu       sync.Mutex
	waiting  []*deliveryRead
	inflight int
}

// deliveryRead is one attempt's read.
type deliveryRead struct {
	ctx  context.Context
	id   string
	done chan struct{}
	row  deliveryToSendRow
	err  error
}

// maxDeliveryReadBatches is how many read round trips may be out at once:
// two, so one is always on its way while the next gathers.
const maxDeliveryReadBatches = 2

// maxDeliveryReadBatch bounds one round trip's reads.
const maxDeliveryReadBatch = 128

// deliveryReadTimeout bounds a shared round trip, which runs on a context
// of its own (one attempt giving up must not fail the others' reads).
const deliveryReadTimeout = 15 * time.Second

// read returns the row of delivery id, coalesced with the reads asked for
// at the same time.
func (b *deliveryReads) read(ctx context.Context, db *DB, id string) (deliveryToSendRow, error) {
	c := &deliveryRead{ctx: ctx, id: id, done: make(chan struct{})}
	b.mu.Lock()
	b.waiting = append(b.waiting, c)
	if b.inflight < maxDeliveryReadBatches {
		b.inflight++
		calls := b.takeLocked()
		b.mu.Unlock()
		b.send(db, calls)
		b.next(db)
	} else {
		b.mu.Unlock()
	}
	select {
	case <-c.done:
		return c.row, c.err
	case <-ctx.Done():
		// Left in the queue: the batch that takes it skips it, or reads
		// it for nobody.
		return deliveryToSendRow{}, ctx.Err()
	}
}

// takeLocked returns the next waiting reads, up to maxDeliveryReadBatch,
// dropping those whose caller has gone.
func (b *deliveryReads) takeLocked() []*deliveryRead {
	var out []*deliveryRead
	i := 0
	for ; i < len(b.waiting) && len(out) < maxDeliveryReadBatch; i++ {
		if c := b.waiting[i]; c.ctx.Err() == nil {
			out = append(out, c)
		}
	}
	rest := copy(b.waiting, b.waiting[i:])
	clear(b.waiting[rest:])
	b.waiting = b.waiting[:rest]
	return out
}

// next sends what waited while a slot's round trip was out, from a
// goroutine of its own so that the caller that held the slot goes on; or
// frees the slot when nothing waits.
func (b *deliveryReads) next(db *DB) {
	b.mu.Lock()
	calls := b.takeLocked()
	if len(calls) == 0 {
		b.inflight--
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go func() {
		b.send(db, calls)
		b.next(db)
	}()
}

// send reads calls' rows in one round trip and hands each its own.
func (b *deliveryReads) send(db *DB, calls []*deliveryRead) {
	if len(calls) == 0 {
		return
	}
	defer func() {
		for _, c := range calls {
			close(c.done)
		}
	}()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(calls[0].ctx), deliveryReadTimeout)
	defer cancel()
	q := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(calls)+3)}
	q.Queue("BEGIN")
	q.Queue(successIndexOnlySQL)
	for _, c := range calls {
		q.Queue(getDeliveryToSendSQL, c.id)
	}
	q.Queue("COMMIT")
	br := db.Pool.SendBatch(ctx, q)
	defer br.Close()
	var err error
	for range 2 {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	for _, c := range calls {
		if err != nil {
			c.err = err
			continue
		}
		c.err = br.QueryRow().Scan(c.row.dest()...)
		if c.err != nil && c.err != pgx.ErrNoRows {
			err = c.err // the transaction is aborted: the rest fail too
		}
	}
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.Close()
	}
	if err != nil {
		// A failed COMMIT or close fails every read of the round trip, so
		// no attempt acts on a row its transaction could not vouch for.
		for _, c := range calls {
			if c.err == nil {
				c.err = err
			}
		}
	}
}
