package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/webhooks"
)

// successBatch records the successful attempts of one process in shared
// round trips and commits (issue 16 item 5). At 1,000 deliveries a second, one commit per
// success was a WAL flush per delivery on a database the whole machine
// shares. A success waits in the queue only while the previous batch is
// being written: there is no timer, so an idle process writes each at
// once, and a busy one writes what accumulated during the last round trip.
type successBatch struct {
	db *DB

	mu       sync.Mutex
	queue    []*pendingSuccess
	flushing bool
}

type pendingSuccess struct {
	id     string
	at     time.Time
	status int32
	done   chan error // buffered: the writer never waits for a caller gone
}

// maxSuccessBatch bounds one batch's deliveries.
const maxSuccessBatch = 256

// successWriteTimeout bounds one batch's round trip: it serves many callers,
// so it runs on a context of its own, not on the first caller's.
const successWriteTimeout = 15 * time.Second

// record queues a success and waits until it is committed, or ctx ends
// (the success may then still be written; the job that recorded it runs
// again, finds the schedule ended and sends nothing).
func (b *successBatch) record(ctx context.Context, id string, at time.Time, status int) error {
	p := &pendingSuccess{id: id, at: at, status: int32(status), done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	if !b.flushing {
		b.flushing = true
		go b.flush()
	}
	b.mu.Unlock()
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush writes batches until the queue is empty.
func (b *successBatch) flush() {
	for {
		batch := b.take()
		if len(batch) == 0 {
			return
		}
		b.write(batch)
	}
}

// take removes the next batch from the queue: at most maxSuccessBatch
// successes of distinct deliveries (a second success of one delivery waits
// for the next batch, so attempts counts both). With nothing queued it
// ends the flushing.
func (b *successBatch) take() []*pendingSuccess {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.flushing = false
		return nil
	}
	var batch, rest []*pendingSuccess
	seen := make(map[string]bool, min(len(b.queue), maxSuccessBatch))
	for _, p := range b.queue {
		if len(batch) == maxSuccessBatch || seen[p.id] {
			rest = append(rest, p)
			continue
		}
		seen[p.id] = true
		batch = append(batch, p)
	}
	b.queue = rest
	return batch
}

// write records batch as one pgx batch: BEGIN, the setting below, one
// single-row UPDATE per delivery, COMMIT. One round trip and one commit
// (one WAL flush) for them all. The rows are updated in id order, so two
// processes' batches that share a delivery (a job run twice) wait for each
// other instead of deadlocking. Each caller hears how its own row went: a
// delivery not updated is gone (deleted with its endpoint). A failed batch
// leaves its connection in an aborted transaction, which the pool closes
// instead of lending.
func (b *successBatch) write(batch []*pendingSuccess) {
	slices.SortFunc(batch, func(x, y *pendingSuccess) int { return strings.Compare(x.id, y.id) })
	ctx, cancel := context.WithTimeout(context.Background(), successWriteTimeout)
	defer cancel()
	q := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(batch)+3)}
	q.Queue("BEGIN")
	q.Queue(successIndexOnlySQL)
	for _, p := range batch {
		q.Queue(recordSuccessSQL, p.id, webhooks.StatusSucceeded, p.status, p.at)
	}
	q.Queue("COMMIT")
	updated := make([]bool, len(batch))
	err := b.send(ctx, q, updated)
	for i, p := range batch {
		switch {
		case err != nil:
			p.done <- fmt.Errorf("postgres: record webhook delivery success (%d in one batch): %w", len(batch), err)
		case !updated[i]:
			p.done <- platform.NotFound("webhook delivery", p.id)
		default:
			p.done <- nil
		}
	}
}

// successIndexOnlySQL makes the batch's UPDATEs plan as index lookups
// whatever the table's size (issue 30). On a table of a few pages that
// has been analyzed, PostgreSQL rightly finds a sequential scan cheaper
// than the primary key, but it keeps that plan as the connection's
// generic plan until the next ANALYZE, while a new installation's
// deliveries grow the table by thousands of rows a second. SET LOCAL
// holds for the batch's own transaction only.
const successIndexOnlySQL = `SET LOCAL enable_seqscan = off`

// send sends q and reads the UPDATEs' outcomes into updated.
func (b *successBatch) send(ctx context.Context, q *pgx.Batch, updated []bool) error {
	br := b.db.Pool.SendBatch(ctx, q)
	defer br.Close()
	for i := range q.QueuedQueries {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if u := i - 2; u >= 0 && u < len(updated) {
			updated[u] = tag.RowsAffected() == 1
		}
	}
	return br.Close()
}
