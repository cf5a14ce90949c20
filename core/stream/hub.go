package stream

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Defaults of Options.
const (
	// DefaultBuffer is how many events a subscriber may have waiting
	// before it is cut off with ErrOverflow.
	DefaultBuffer = 256
	// DefaultRetention is how far back a reconnect with Last-Event-ID is
	// replayed: an event that occurred longer ago is not replayed from, and
	// the subscriber is told of the gap.
	DefaultRetention = 24 * time.Hour
	// DefaultPageSize is how many events one read of the log returns.
	DefaultPageSize = 500
	// DefaultSafetyPoll is how often a feed reads the log with no
	// notification, in case one was lost.
	DefaultSafetyPoll = 5 * time.Second
)

// Pending events (committed, but whose place in the order is not final
// yet) are read again after a delay that doubles from pendingMin to
// pendingMax; a read that fails is retried after errorMin doubling to
// errorMax, which is short so that subscribers catch up within a second
// or two of the database's return (one read a second per feed is no load
// for a database that is away).
const (
	pendingMin = 20 * time.Millisecond
	pendingMax = time.Second
	errorMin   = 100 * time.Millisecond
	errorMax   = time.Second
)

// A subscriber whose buffer is full when the feed is woken to read gets up
// to fullGrace to make room (the feed waits, re-checking every fullRecheck,
// and reads nothing meanwhile) before it is cut off with ErrOverflow: one
// that keeps up is never cut off by a burst (a backlog after an outage)
// that arrives faster than it is written out; one that took nothing for a
// second is not keeping up.
const (
	fullGrace   = time.Second
	fullRecheck = 10 * time.Millisecond
)

// Options tune a Hub. Zero values take the defaults.
type Options struct {
	Buffer     int
	Retention  time.Duration
	PageSize   int
	SafetyPoll time.Duration
	// Logger hears about reads of the log that failed; nil is
	// slog.Default().
	Logger *slog.Logger
}

// Errors that end a subscription.
var (
	// ErrOverflow: the subscriber did not keep up and its buffer filled;
	// it was cut off so that it cannot grow the server's memory. It can
	// reconnect from the last event it received.
	ErrOverflow = errors.New("stream: the subscriber fell too far behind and was cut off")
	// ErrClosed: the hub is shutting down (the process is stopping).
	ErrClosed = errors.New("stream: the server is shutting down")
	// ErrIdle is returned by Next when nothing arrived within its wait; the
	// subscription goes on (time for a heartbeat).
	ErrIdle = errors.New("stream: nothing to send yet")
)

// Hub delivers events to this process's subscribers: one feed per account
// with subscribers, reading the log once for all of them.
type Hub struct {
	log   Log
	clock platform.Clock
	opts  Options

	ctx    context.Context // ends when the hub closes
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards feeds and closed; taken before any feed's mu
	feeds  map[string]*feed
	closed bool

	subscribers atomic.Int64
}

// NewHub builds a hub reading log.
func NewHub(log Log, clock platform.Clock, opts Options) *Hub {
	opts.Buffer = cmp.Or(opts.Buffer, DefaultBuffer)
	opts.Retention = cmp.Or(opts.Retention, DefaultRetention)
	opts.PageSize = cmp.Or(opts.PageSize, DefaultPageSize)
	opts.SafetyPoll = cmp.Or(opts.SafetyPoll, DefaultSafetyPoll)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{log: log, clock: clock, opts: opts, ctx: ctx, cancel: cancel, feeds: map[string]*feed{}}
}

// Retention is how far back a reconnect is replayed.
func (h *Hub) Retention() time.Duration { return h.opts.Retention }

// Subscribers is the number of open subscriptions.
func (h *Hub) Subscribers() int { return int(h.subscribers.Load()) }

// Wake tells the hub that the account has new events; "" wakes every feed.
// It never blocks.
func (h *Hub) Wake(accountID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if accountID == "" {
		for _, f := range h.feeds {
			f.poke()
		}
		return
	}
	if f := h.feeds[accountID]; f != nil {
		f.poke()
	}
}

// Listen runs the notifier until ctx ends or the hub closes, waking feeds.
// When the notifier fails it is restarted after a pause, and every feed is
// woken, since notifications may have been lost meanwhile.
func (h *Hub) Listen(ctx context.Context, n Notifier) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-h.ctx.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	wait := errorMin
	for {
		start := time.Now()
		err := n.Run(ctx, h.Wake)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > errorMax {
			wait = errorMin
		}
		h.opts.Logger.Warn("stream: listening for new events failed; retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, errorMax)
		h.Wake("")
	}
}

// Close ends every subscription with ErrClosed and stops the feeds. Call
// it before the HTTP server shuts down: open streams would otherwise hold
// the shutdown until its timeout.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for _, f := range h.feeds {
		f.mu.Lock()
		for s := range f.subs {
			s.end(ErrClosed)
		}
		f.subs = nil
		f.mu.Unlock()
	}
	h.feeds = map[string]*feed{}
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// Request is what a subscriber asks for.
type Request struct {
	AccountID string
	Filter    Filter
	// LastEventID, when set, is the id of the last event the subscriber
	// received: delivery resumes right after it.
	LastEventID string
}

// Subscribe opens a subscription. With a LastEventID inside the retained
// window, the subscription first replays what followed that event, then
// goes on live with no event twice and none missing; with one outside it
// (or unknown), it starts live and Gap reports it.
func (h *Hub) Subscribe(ctx context.Context, req Request) (*Subscription, error) {
	s := &Subscription{hub: h, account: req.AccountID, filter: req.Filter,
		ch: make(chan Entry, h.opts.Buffer), gone: make(chan struct{})}
	var from Position
	resume := false
	if req.LastEventID != "" {
		pos, at, ok, err := h.log.Locate(ctx, req.AccountID, req.LastEventID)
		if err != nil {
			return nil, err
		}
		if ok && !at.Before(h.clock.Now().Add(-h.opts.Retention)) {
			from, resume = pos, true
		} else {
			s.gap = true
		}
	}

	h.mu.Lock()
	closed, f := h.closed, h.feeds[req.AccountID]
	h.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	var head Position
	if f == nil {
		var err error
		if head, err = h.log.Head(ctx, req.AccountID); err != nil {
			return nil, err
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	f = h.feeds[req.AccountID]
	if f == nil {
		f = &feed{hub: h, account: req.AccountID, cursor: head, wake: make(chan struct{}, 1),
			stop: make(chan struct{}), subs: map[*Subscription]struct{}{}}
		h.feeds[req.AccountID] = f
		h.wg.Add(1)
		go f.run()
	}
	f.mu.Lock()
	f.subs[s] = struct{}{}
	joined := f.cursor
	f.mu.Unlock()
	s.feed = f
	// Everything after joined arrives on s.ch; what lies between the last
	// event received and joined is read from the log by Next.
	s.last = joined
	switch {
	case resume && from.Less(joined):
		s.replaying, s.readPos, s.replayTo = true, from, joined
	case resume:
		// The subscriber is ahead of this process's feed (it read another
		// process's): skip what it already has.
		s.last = from
	}
	h.subscribers.Add(1)
	return s, nil
}

// Subscription is one subscriber's view of its account's stream. Next is
// called from one goroutine; Close from any.
type Subscription struct {
	hub     *Hub
	feed    *feed
	account string
	filter  Filter
	gap     bool

	ch   chan Entry
	gone chan struct{} // closed by end
	once sync.Once
	err  error // why it ended; written before gone closes

	// Replay: the events after readPos up to replayTo come from the log.
	replaying bool
	readPos   Position
	replayTo  Position
	pending   []Entry
	// last is the position of the last event handled (sent or filtered
	// out); anything at or before it is never sent again.
	last Position
	// fullSince is when the feed first found ch full with more to give;
	// zero while it has room. Guarded by the feed's mu.
	fullSince time.Time
}

// Gap reports that the subscriber's LastEventID could not be resumed from
// (unknown, or older than the retained window): events may have been
// missed, and the subscriber should re-read the state it cares about.
func (s *Subscription) Gap() bool { return s.gap }

// Next returns the next event for the subscriber. It returns ErrIdle when
// nothing arrived within wait (the subscription goes on), ErrOverflow or
// ErrClosed when the subscription has ended, or ctx's error.
func (s *Subscription) Next(ctx context.Context, wait time.Duration) (Entry, error) {
	for {
		select {
		case <-s.gone:
			return Entry{}, s.err
		default:
		}
		if s.replaying {
			e, ok, err := s.replayNext(ctx)
			if err != nil {
				return Entry{}, err
			}
			if ok {
				return e, nil
			}
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-s.gone:
			timer.Stop()
			return Entry{}, s.err
		case e := <-s.ch:
			timer.Stop()
			if !s.last.Less(e.Position) {
				continue
			}
			s.last = e.Position
			return e, nil
		case <-timer.C:
			return Entry{}, ErrIdle
		case <-ctx.Done():
			timer.Stop()
			return Entry{}, ctx.Err()
		}
	}
}

// replayNext returns the next replayed event the filter lets through, or
// ok false once the replay has reached the point where the subscription
// joined the live feed.
func (s *Subscription) replayNext(ctx context.Context) (Entry, bool, error) {
	for len(s.pending) == 0 {
		entries, _, err := s.hub.log.Read(ctx, s.account, s.readPos, s.hub.opts.PageSize)
		if err != nil {
			return Entry{}, false, err
		}
		for _, e := range entries {
			if s.replayTo.Less(e.Position) {
				break
			}
			s.readPos = e.Position
			if s.filter.Match(e.Event) {
				s.pending = append(s.pending, e)
			}
		}
		if len(s.pending) == 0 && (len(entries) < s.hub.opts.PageSize || s.replayTo.Less(entries[len(entries)-1].Position)) {
			s.replaying = false
			return Entry{}, false, nil
		}
	}
	e := s.pending[0]
	s.pending = s.pending[1:]
	if len(s.pending) == 0 && !s.readPos.Less(s.replayTo) {
		s.replaying = false
	}
	return e, true, nil
}

// Close ends the subscription; calling it again is harmless.
func (s *Subscription) Close() {
	h, f := s.hub, s.feed
	h.mu.Lock()
	f.mu.Lock()
	delete(f.subs, s)
	if len(f.subs) == 0 && h.feeds[f.account] == f {
		delete(h.feeds, f.account)
		close(f.stop)
	}
	f.mu.Unlock()
	h.mu.Unlock()
	s.end(ErrClosed)
}

// end marks the subscription over with err, once.
func (s *Subscription) end(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.gone)
		s.hub.subscribers.Add(-1)
	})
}

// feed reads one account's log for this process's subscribers of it.
type feed struct {
	hub     *Hub
	account string
	wake    chan struct{} // capacity 1: wakes coalesce
	stop    chan struct{} // closed when the last subscriber leaves

	mu     sync.Mutex
	cursor Position // the last event handed out
	subs   map[*Subscription]struct{}
}

func (f *feed) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *feed) run() {
	defer f.hub.wg.Done()
	pendingWait, errorWait := pendingMin, errorMin
	for {
		more, pending, full, err := f.poll()
		var wait time.Duration
		switch {
		case full:
			wait = fullRecheck
		case err != nil:
			if f.hub.ctx.Err() != nil {
				return
			}
			f.hub.opts.Logger.Warn("stream: reading the event log failed", "err", err, "retryIn", errorWait)
			wait, errorWait = errorWait, min(errorWait*2, errorMax)
		case more:
			errorWait = errorMin
			continue
		case pending:
			wait, pendingWait = pendingWait, min(pendingWait*2, pendingMax)
			errorWait = errorMin
		default:
			wait, pendingWait, errorWait = f.hub.opts.SafetyPoll, pendingMin, errorMin
		}
		timer := time.NewTimer(wait)
		select {
		case <-f.wake:
			timer.Stop()
		case <-timer.C:
		case <-f.stop:
			timer.Stop()
			return
		case <-f.hub.ctx.Done():
			timer.Stop()
			return
		}
	}
}

// poll reads the log after the cursor once and hands each event to every
// subscriber it is for. It reads no more than the fullest subscriber has
// room for, so a read never overfills a buffer by itself; when a
// subscriber has no room at all it reports full (the feed waits a moment
// and polls again), and cuts off one that has had no room for fullGrace.
func (f *feed) poll() (more, pending, full bool, err error) {
	f.mu.Lock()
	cursor := f.cursor
	limit := f.hub.opts.PageSize
	now := time.Now()
	for s := range f.subs {
		room := cap(s.ch) - len(s.ch)
		switch {
		case room > 0:
			s.fullSince = time.Time{}
			limit = min(limit, room)
		case s.fullSince.IsZero():
			s.fullSince = now
			full = true
		case now.Sub(s.fullSince) > fullGrace:
			delete(f.subs, s)
			s.end(ErrOverflow)
		default:
			full = true
		}
	}
	f.mu.Unlock()
	if full {
		return false, false, true, nil
	}
	entries, pending, err := f.hub.log.Read(f.hub.ctx, f.account, cursor, limit)
	if err != nil {
		return false, false, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range entries {
		for s := range f.subs {
			if !s.filter.Match(e.Event) {
				continue
			}
			select {
			case s.ch <- e:
			default:
				// Only a subscriber that joined after the read was sized
				// can be full here; it has not kept up with its own join.
				delete(f.subs, s)
				s.end(ErrOverflow)
			}
		}
		f.cursor = e.Position
	}
	return len(entries) == limit, pending, false, nil
}
