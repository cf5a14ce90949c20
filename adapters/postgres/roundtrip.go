package postgres

import (
	"context"
	"sync"
	"sync/atomic"
)

// roundTrips gathers the calls that arrive while its round trips are out
// into one round trip (issue 30). On a busy server most of what a short
// read costs, in qms and in PostgreSQL alike, is the round trip itself: a
// write and a read on each side, a backend woken, a transaction begun and
// ended. While slots round trips are on their way the next calls wait,
// and go out together, up to maxBatch of them, as soon as one returns. A
// call that finds a free slot goes out at once: a quiet server waits for
// nothing.
//
// A call waits only for a round trip sent after it arrived, so a round
// trip whose statements take their snapshot when they run sees every
// change committed before the call was made. send is what a round trip
// is: it fills in each call's out and err and never closes done
// (roundTrips does once send returns). It runs on the goroutine of the
// call that found the slot free, or on one of its own for the calls that
// waited; a call whose caller has gone before its round trip left is not
// sent. Turn views (viewbatch.go) and webhook attempts' reads
// (webhooks_reads.go) go through one each.
type roundTrips[Q, R any] struct {
	slots    int
	maxBatch int
	send     func(calls []*roundTripCall[Q, R])
	// keep, when set, copies a call's in before the call waits: a waiting
	// call may be sent after its caller has gone (its context ended while
	// its round trip was leaving), and a caller's in may alias memory the
	// caller reuses once it returns (a turn id is fiber's path buffer,
	// Immutable off). A call that finds a free slot is sent while its
	// caller waits for it, so it is not copied.
	keep func(Q) Q

	mu       sync.Mutex
	waiting  []*roundTripCall[Q, R]
	inflight int
	// shared counts the calls sent in a round trip with others (tests).
	shared atomic.Int64
}

// roundTripCall is one caller's call: what it asked for (in) under its
// context, and, once done is closed, its own answer.
type roundTripCall[Q, R any] struct {
	ctx  context.Context
	in   Q
	out  R
	err  error
	done chan struct{}
}

// newRoundTrips returns the round trips of send: at most slots out at
// once (at least one), each of at most maxBatch calls (at least one).
func newRoundTrips[Q, R any](slots, maxBatch int, send func(calls []*roundTripCall[Q, R])) *roundTrips[Q, R] {
	return &roundTrips[Q, R]{slots: max(slots, 1), maxBatch: max(maxBatch, 1), send: send}
}

// do sends in, in a round trip of its own or with the calls of the
// moment, and returns its answer; or ctx's error when ctx ends first
// (the other calls of its round trip still get theirs).
func (b *roundTrips[Q, R]) do(ctx context.Context, in Q) (R, error) {
	c := &roundTripCall[Q, R]{ctx: ctx, in: in, done: make(chan struct{})}
	b.mu.Lock()
	if b.inflight >= b.slots && b.keep != nil {
		c.in = b.keep(in)
	}
	b.waiting = append(b.waiting, c)
	if b.inflight < b.slots {
		// A free slot: this caller sends what waits, itself included
		// (unless its context has ended already), and hands the slot on.
		b.inflight++
		calls := b.takeLocked()
		b.mu.Unlock()
		b.sendAndNext(calls)
	} else {
		b.mu.Unlock()
	}
	// An answer already there wins over a context that ended meanwhile.
	select {
	case <-c.done:
		return c.out, c.err
	default:
	}
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		// Left behind in the queue: the round trip that takes it skips
		// it (takeLocked), or sends it for nobody.
		var zero R
		return zero, ctx.Err()
	}
}

// sendAndNext sends calls, answers them, and then hands the slot on
// (next), even when send panics, so a slot is never lost.
func (b *roundTrips[Q, R]) sendAndNext(calls []*roundTripCall[Q, R]) {
	defer b.next()
	b.sendNow(calls)
}

// sendNow sends calls in one round trip and closes their done.
func (b *roundTrips[Q, R]) sendNow(calls []*roundTripCall[Q, R]) {
	if len(calls) == 0 {
		return
	}
	defer func() {
		for _, c := range calls {
			close(c.done)
		}
	}()
	if len(calls) > 1 {
		b.shared.Add(int64(len(calls)))
	}
	b.send(calls)
}

// takeLocked returns the next waiting calls, up to maxBatch, and drops
// those whose caller has gone on the way: none returned means none waits.
func (b *roundTrips[Q, R]) takeLocked() []*roundTripCall[Q, R] {
	var out []*roundTripCall[Q, R]
	i := 0
	for ; i < len(b.waiting) && len(out) < b.maxBatch; i++ {
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
// goroutine of its own so that the caller that held the slot answers now;
// or frees the slot when nothing waits.
func (b *roundTrips[Q, R]) next() {
	b.mu.Lock()
	calls := b.takeLocked()
	if len(calls) == 0 {
		b.inflight--
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go b.sendAndNext(calls)
}
