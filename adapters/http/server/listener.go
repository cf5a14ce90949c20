package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Accept errors are retried after acceptMin doubling to acceptMax. An
// error that is not known to pass (see transient) ends the listener after
// acceptGiveUp of nothing but failures: a listener that cannot recover
// ends the process (its supervisor restarts it) rather than leaving it up,
// holding its streams and accepting nothing.
const (
	acceptMin    = 5 * time.Millisecond
	acceptMax    = time.Second
	acceptGiveUp = 30 * time.Second
)

// refusal is what a connection past the cap gets before it is closed: a
// 503 in the error envelope, asking to come back in two seconds.
var refusal = []byte(fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\n"+
	"Content-Type: application/json\r\nRetry-After: 2\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
	len(refusalBody), refusalBody))

const refusalBody = `{"error":{"code":"SERVICE_UNAVAILABLE","message":"the server has as many connections open as it can hold; retry in 2 seconds","details":{"retryAfter":2}}}`

// guarded is the server's listener: it keeps accepting while the process
// lives, and caps the connections open at once.
//
// The standard library's accept loops treat EMFILE ("too many open
// files") as temporary; fasthttp's treats it as permanent and stops
// serving for good while the process stays up. guarded never returns such
// an error: it retries, backing off, so the server accepts again as soon
// as connections close. And it keeps the process from getting there: past
// max open connections a new one is answered 503 (with Retry-After) and
// closed at once, so file descriptors stay for the database and the rest.
type guarded struct {
	net.Listener
	max    int64
	open   atomic.Int64
	log    *slog.Logger
	giveUp time.Duration

	refused    atomic.Int64
	lastLogged atomic.Int64 // unix nanos of the last warning about refusals or errors
}

func newGuarded(ln net.Listener, max int, log *slog.Logger) *guarded {
	return &guarded{Listener: ln, max: int64(max), log: log, giveUp: acceptGiveUp}
}

// Open is the number of connections accepted and not yet closed.
func (l *guarded) Open() int { return int(l.open.Load()) }

// Accept returns the next connection under the cap. It returns an error
// only when the listener is closed, or failed for acceptGiveUp with
// errors not known to pass.
func (l *guarded) Accept() (net.Conn, error) {
	wait := acceptMin
	var failingSince time.Time
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if !transient(err) && time.Since(failingSince) > l.giveUp {
				l.log.Error("http: the listener keeps failing; giving up", "err", err, "since", failingSince)
				return nil, err
			}
			l.warn("http: accepting a connection failed; retrying", "err", err, "in", wait, "open", l.open.Load())
			time.Sleep(wait)
			wait = min(wait*2, acceptMax)
			continue
		}
		wait, failingSince = acceptMin, time.Time{}
		if l.open.Load() >= l.max {
			l.refuse(c)
			continue
		}
		l.open.Add(1)
		cc := &counted{Conn: c, l: l}
		if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			cc.peer = ta.AddrPort().Addr().Unmap().WithZone("")
			cc.peerText = cc.peer.String()
		}
		return cc, nil
	}
}

// refuse answers a connection past the cap and closes it. The answer fits
// a fresh socket's send buffer, so the write does not wait; the deadline
// bounds it anyway.
//
// The close is graceful: the answer, then a FIN, then whatever the client
// sent (its request) is read and dropped for at most refuseDrain before
// the socket closes. Closing at once with the request unread (or with
// linger 0) makes the kernel send a reset, and a reset that reaches the
// client before it reads the 503 loses the answer; it can even fail the
// client's connect. The drain is bounded in time and bytes, and the cap
// sits below the file limit, so refused sockets have room to linger.
func (l *guarded) refuse(c net.Conn) {
	n := l.refused.Add(1)
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.Write(refusal)
	l.warn("http: connection cap reached; new connections get 503", "max", l.max, "refusedSoFar", n)
	tc, ok := c.(*net.TCPConn)
	if !ok {
		_ = c.Close()
		return
	}
	_ = tc.CloseWrite()
	go func() {
		_ = tc.SetReadDeadline(time.Now().Add(refuseDrain))
		_, _ = io.Copy(io.Discard, io.LimitReader(tc, 64<<10))
		_ = tc.Close()
	}()
}

// refuseDrain bounds how long a refused connection is read before it
// closes.
const refuseDrain = 250 * time.Millisecond

// warn logs at most once a second: an accept loop failing or refusing in
// a storm must not flood the log.
func (l *guarded) warn(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := l.lastLogged.Load()
	if now-last < int64(time.Second) || !l.lastLogged.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn(msg, args...)
}

// transient reports whether an accept error is known to pass: out of file
// descriptors or memory (until connections close), an aborted or
// interrupted handshake, a timeout.
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// counted is an accepted connection, counted until it is closed.
type counted struct {
	net.Conn
	l    *guarded
	once sync.Once
	// peer is the remote address, and peerText its spelling, worked out
	// once for all the connection's requests (httpx.PeerAddresser).
	peer     netip.Addr
	peerText string
	// rd and wd are its read and write deadlines, armed lazily
	// (deadlines.go).
	rd, wd lazyDeadline
}

// PeerAddr is the connection's remote address (httpx.PeerAddresser).
func (c *counted) PeerAddr() (netip.Addr, string) { return c.peer, c.peerText }

func (c *counted) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
