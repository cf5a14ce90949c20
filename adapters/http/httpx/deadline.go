package httpx

import (
	"context"
	"sync"
	"time"
)

// withDeadline is context.WithDeadline for a request's context, made
// cheap for the requests that never wait: context.WithTimeout allocates
// and starts a timer for every request and stops it at the end (5-8% of
// a memory-mode GET's handler CPU, issue 16), though a request served
// from memory never selects on Done. Here the timer starts only when
// someone asks for Done (a database driver does, for each query) or for
// an AfterFunc (a context derived from it); Err reads the clock
// meanwhile, so the deadline holds either way.
//
// It applies only under a parent that is never cancelled and has no
// deadline (fiber's request context is context.Background()); under
// any other, it is context.WithDeadline.
func withDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if c := newDeadlineCtx(parent, d); c != nil {
		return c, func() { c.cancel(context.Canceled) }
	}
	return context.WithDeadline(parent, d)
}

// newDeadlineCtx is withDeadline's own context, or nil under a parent it
// does not apply to. End it with cancel(context.Canceled): the Deadline
// middleware does, without the closure of a CancelFunc to allocate.
func newDeadlineCtx(parent context.Context, d time.Time) *deadlineCtx {
	c := &deadlineCtx{}
	if !c.init(parent, d) {
		return nil
	}
	return c
}

// init makes the zero c withDeadline's context under parent, in place
// (the Deadline middleware's is part of the request's state: one
// allocation less); false under a parent it does not apply to.
func (c *deadlineCtx) init(parent context.Context, d time.Time) bool {
	if _, has := parent.Deadline(); has || parent.Done() != nil {
		return false
	}
	c.parent, c.deadline = parent, d
	return true
}

// deadlineCtx is the context withDeadline returns.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time

	mu    sync.Mutex
	err   error         // set once: DeadlineExceeded or Canceled
	done  chan struct{} // made on demand; closed when err is set
	timer *time.Timer   // started with done, while err is nil
	funcs map[uint64]func()
	next  uint64
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Value(key any) any { return c.parent.Value(key) }

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked()
	return c.done
}

// Err is the error the context ended with, or nil; past the deadline it
// is DeadlineExceeded whether or not a timer runs.
func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	if c.err == nil && !time.Now().Before(c.deadline) {
		funcs := c.endLocked(context.DeadlineExceeded)
		c.mu.Unlock()
		run(funcs)
		return context.DeadlineExceeded
	}
	err := c.err
	c.mu.Unlock()
	return err
}

// AfterFunc arranges to call f in its own goroutine once the context
// ends, as context.AfterFunc does; the context package calls it to
// propagate the end to derived contexts, so that they need no goroutine
// of their own waiting on Done.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	c.armLocked()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.funcs == nil {
		c.funcs = map[uint64]func(){}
	}
	id := c.next
	c.next++
	c.funcs[id] = f
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, waiting := c.funcs[id]
		delete(c.funcs, id)
		return waiting
	}
}

// armLocked makes the done channel and starts the deadline's timer, once.
func (c *deadlineCtx) armLocked() {
	if c.done != nil {
		return
	}
	c.done = make(chan struct{})
	if c.err != nil {
		close(c.done)
		return
	}
	wait := time.Until(c.deadline)
	if wait <= 0 {
		c.err = context.DeadlineExceeded
		close(c.done)
		return
	}
	c.timer = time.AfterFunc(wait, func() { c.cancel(context.DeadlineExceeded) })
}

func (c *deadlineCtx) cancel(err error) {
	c.mu.Lock()
	funcs := c.endLocked(err)
	c.mu.Unlock()
	run(funcs)
}

// endLocked ends the context with err, unless it has ended, and returns
// the functions to call.
func (c *deadlineCtx) endLocked(err error) []func() {
	if c.err != nil {
		return nil
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	var funcs []func()
	for _, f := range c.funcs {
		funcs = append(funcs, f)
	}
	c.funcs = nil
	return funcs
}

func run(funcs []func()) {
	for _, f := range funcs {
		go f()
	}
}
