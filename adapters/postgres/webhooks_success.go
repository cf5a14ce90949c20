package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/webhooks"
)

// successBatch records the successful attempts of one process in shared
// UPDATEs (issue 16 item 5). At 1,000 deliveries a second, one commit per
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

// maxSuccessBatch bounds one UPDATE's deliveries.
const maxSuccessBatch = 256

// successWriteTimeout bounds one batch's UPDATE: it serves many callers,
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

// write records batch in one UPDATE and tells each caller how it went: a
// delivery not updated is gone (deleted with its endpoint).
func (b *successBatch) write(batch []*pendingSuccess) {
	ids := make([]string, len(batch))
	ats := make([]time.Time, len(batch))
	statuses := make([]int32, len(batch))
	for i, p := range batch {
		ids[i], ats[i], statuses[i] = p.id, p.at, p.status
	}
	ctx, cancel := context.WithTimeout(context.Background(), successWriteTimeout)
	defer cancel()
	found := make(map[string]bool, len(batch))
	err := b.db.withPgxRows(ctx, recordSuccessSQL, []any{ids, ats, statuses, webhooks.StatusSucceeded}, func(scan func(...any) error) error {
		var id string
		if err := scan(&id); err != nil {
			return err
		}
		found[id] = true
		return nil
	})
	for _, p := range batch {
		switch {
		case err != nil:
			p.done <- fmt.Errorf("postgres: record webhook delivery success (%d in one statement): %w", len(batch), err)
		case !found[p.id]:
			p.done <- platform.NotFound("webhook delivery", p.id)
		default:
			p.done <- nil
		}
	}
}
