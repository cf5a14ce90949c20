package counterhttp

import (
	"context"
	"sync"
	"time"

	"github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/stream"
)

// sharedReads shares the reads of a queue's console among the console
// streams of that queue open in this process, whatever their links: an
// event of the queue costs one read (counter.Service.QueueConsole), from
// which each stream draws its link's console (Console.For), not one read
// per open console. A read serves every stream that received no later
// event before it started: an event a stream received has committed, so
// a read begun after it sees its change.
type sharedReads struct {
	read func(ctx context.Context, accountID, queueID string) (counter.Console, error)

	mu     sync.Mutex
	queues map[queueKey]*sharedQueue
}

type queueKey struct{ account, queue string }

// sharedQueue is one queue's latest read, and how many streams use it.
type sharedQueue struct {
	streams int
	last    *sharedRead
}

// sharedRead is one read of a queue's console, done or in flight (done
// open): it shows every event up to covers.
type sharedRead struct {
	covers stream.Position
	done   chan struct{}
	con    counter.Console
	err    error
}

func newSharedReads(read func(ctx context.Context, accountID, queueID string) (counter.Console, error)) *sharedReads {
	return &sharedReads{read: read, queues: map[queueKey]*sharedQueue{}}
}

// open counts a stream of the queue; close lets go of it (the queue's
// read is forgotten with its last stream).
func (r *sharedReads) open(accountID, queueID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := queueKey{accountID, queueID}
	q := r.queues[k]
	if q == nil {
		q = &sharedQueue{}
		r.queues[k] = q
	}
	q.streams++
}

func (r *sharedReads) close(accountID, queueID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := queueKey{accountID, queueID}
	if q := r.queues[k]; q != nil {
		if q.streams--; q.streams <= 0 {
			delete(r.queues, k)
		}
	}
}

// after returns the queue's console as it is after the event at p (which
// the caller received): the read in flight or done that covers p, else a
// new one. A failed read is not shared past its waiters.
func (r *sharedReads) after(ctx context.Context, accountID, queueID string, p stream.Position) (counter.Console, error) {
	k := queueKey{accountID, queueID}
	r.mu.Lock()
	q := r.queues[k]
	if q == nil { // not opened: a read of its own
		r.mu.Unlock()
		return r.readNow(accountID, queueID)
	}
	if cur := q.last; cur != nil && !cur.covers.Less(p) && !cur.failed() {
		r.mu.Unlock()
		select {
		case <-cur.done:
			return cur.con, cur.err
		case <-ctx.Done():
			return counter.Console{}, ctx.Err()
		}
	}
	nr := &sharedRead{covers: p, done: make(chan struct{})}
	q.last = nr
	r.mu.Unlock()
	nr.con, nr.err = r.readNow(accountID, queueID)
	close(nr.done)
	return nr.con, nr.err
}

// readNow reads the queue's console, for up to 10 s whatever the stream
// that asked (others may be waiting for the read).
func (r *sharedReads) readNow(accountID, queueID string) (counter.Console, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.read(ctx, accountID, queueID)
}

// failed reports whether the read is done and failed.
func (s *sharedRead) failed() bool {
	select {
	case <-s.done:
		return s.err != nil
	default:
		return false
	}
}
