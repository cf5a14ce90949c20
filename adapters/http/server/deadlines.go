package server

import (
	"errors"
	"os"
	"sync"
	"time"
)

// A connection's deadlines, armed lazily.
//
// fasthttp sets a connection's read deadline twice a request (the idle
// wait, then the headers' read) and its write deadline once, each a
// moving time a few seconds ahead. Each call re-arms the runtime's poll
// timer (a lock and a timer heap update: about 2.5 % of a memory-mode
// GET's CPU under P1's load, issue 30), though the deadline almost never
// fires. Here a deadline is armed on the socket only when it is earlier
// than the one armed; a later one is remembered. When the armed one passes
// while the latest asked for has not, the read or write that failed with
// os.ErrDeadlineExceeded re-arms the latest and goes on, so an operation
// fails exactly when it would have with every deadline armed: at the
// latest deadline set before it failed. Under steady traffic the socket's
// deadline is re-armed about once per timeout instead of three times a
// request.
type lazyDeadline struct {
	mu sync.Mutex
	// want is the deadline last asked for, armed the one on the socket;
	// the zero time is none (later than any).
	want, armed time.Time
}

// earlier tells whether deadline a comes before deadline b (zero: none).
func earlier(a, b time.Time) bool {
	return !a.IsZero() && (b.IsZero() || a.Before(b))
}

// set asks for deadline t; arm sets it on the socket, when it must.
func (d *lazyDeadline) set(t time.Time, arm func(time.Time) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.want = t
	if !earlier(t, d.armed) {
		return nil
	}
	if err := arm(t); err != nil {
		return err
	}
	d.armed = t
	return nil
}

// rearm is called when an operation failed with err: true when err is the
// armed deadline's passing while the deadline asked for is still ahead
// (or none), which it has armed; the operation should go on.
func (d *lazyDeadline) rearm(err error, arm func(time.Time) error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.want.Equal(d.armed) || (!d.want.IsZero() && !time.Now().Before(d.want)) {
		return false
	}
	if arm(d.want) != nil {
		return false
	}
	d.armed = d.want
	return true
}

func (c *counted) SetReadDeadline(t time.Time) error { return c.rd.set(t, c.Conn.SetReadDeadline) }

func (c *counted) SetWriteDeadline(t time.Time) error { return c.wd.set(t, c.Conn.SetWriteDeadline) }

func (c *counted) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *counted) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if n > 0 || err == nil || !c.rd.rearm(err, c.Conn.SetReadDeadline) {
			return n, err
		}
	}
}

func (c *counted) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	for err != nil && c.wd.rearm(err, c.Conn.SetWriteDeadline) {
		var m int
		m, err = c.Conn.Write(p[n:])
		n += m
	}
	return n, err
}
