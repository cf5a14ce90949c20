package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The attempts' reads of their delivery and endpoint (GetDeliveryToSend)
// that arrive together share a round trip (issue 30). River hands a
// process's workers their jobs in fetched batches, so at a few thousand
// deliveries a second dozens of attempts ask for their row within the same
// millisecond; each read alone was a round trip, a backend woken and an
// implicit transaction, which on a small machine cost more than the read.
// They go through roundTrips (roundtrip.go): while maxDeliveryReadBatches
// round trips are out, the next reads wait and go out together as one pgx
// batch when one returns; a read that finds a slot free goes out at once.
// A read waits only for a batch sent after it arrived, and each statement
// takes its snapshot when it runs, so it sees every change committed
// before the attempt asked.
//
// Every round trip, alone or shared, is BEGIN, the success batch's
// successIndexOnlySQL, the reads, COMMIT: on a small analyzed table
// PostgreSQL would plan the read as a sequential scan and keep that plan on
// the connection while the table grows (the success's own exposure, see
// successIndexOnlySQL). The transaction only reads: its commit writes no
// WAL.

// deliveryRead is one attempt's read: the delivery's id in, its row out.
type deliveryRead = roundTripCall[string, deliveryToSendRow]

// maxDeliveryReadBatches is how many read round trips may be out at once:
// two, so one is always on its way while the next gathers.
const maxDeliveryReadBatches = 2

// maxDeliveryReadBatch bounds one round trip's reads.
const maxDeliveryReadBatch = 128

// deliveryReadTimeout bounds a shared round trip, which runs on a context
// of its own (one attempt giving up must not fail the others' reads).
const deliveryReadTimeout = 15 * time.Second

// newDeliveryReads returns the round trips of db's attempts' reads.
func newDeliveryReads(db *DB) *roundTrips[string, deliveryToSendRow] {
	return newRoundTrips(maxDeliveryReadBatches, maxDeliveryReadBatch, func(calls []*deliveryRead) {
		sendDeliveryReads(db, calls)
	})
}

// sendDeliveryReads reads calls' rows in one round trip and hands each its
// own.
func sendDeliveryReads(db *DB, calls []*deliveryRead) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(calls[0].ctx), deliveryReadTimeout)
	defer cancel()
	q := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(calls)+3)}
	q.Queue("BEGIN")
	q.Queue(successIndexOnlySQL)
	for _, c := range calls {
		q.Queue(getDeliveryToSendSQL, c.in)
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
		c.err = br.QueryRow().Scan(c.out.dest()...)
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
