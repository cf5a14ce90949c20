package streamhttp

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
)

// Writer writes one stream's frames to its client.
type Writer struct {
	w    *bufio.Writer
	conn net.Conn
}

// Event writes one SSE event (see writeEvent).
func (w *Writer) Event(id, name string, data any) { writeEvent(w.w, id, name, data) }

// Raw writes an already encoded event: "id:", "event:", "data:" lines and
// the blank line that ends it, as EncodeEvent makes them.
func (w *Writer) Raw(b []byte) { _, _ = w.w.Write(b) }

// Comment writes an SSE comment line (a heartbeat).
func (w *Writer) Comment(text string) { _, _ = w.w.WriteString(": " + text + "\n\n") }

// Flush sends what was written; false when the client is gone or did not
// take it within writeTimeout.
func (w *Writer) Flush() bool {
	if w.w.Buffered() == 0 {
		return true
	}
	_ = w.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	return w.w.Flush() == nil
}

// hijack answers c with the status and headers set on it and hands the
// connection to body, in a goroutine of its own, once the handler has
// returned: the stream holds no fasthttp worker, no pipe and no response
// buffers, only its connection, a small write buffer and body's
// goroutine. ctx ends as soon as the client goes away: a second goroutine
// blocks reading the connection (a stream's client sends nothing once its
// request is in), which returns at once when the connection closes, so a
// closed stream is released within a moment, not at its next heartbeat.
// The connection is closed when body returns.
//
// The response has no length and no chunked coding: as HTTP/1.1 allows,
// it ends when the connection closes (Connection: close), which suits a
// stream that ends only then.
func hijack(c *fiber.Ctx, body func(ctx context.Context, w *Writer)) {
	hijackRaw(c, func(raw net.Conn) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			var b [1]byte
			_, _ = raw.Read(b[:])
			cancel()
		}()
		w := &Writer{w: bufio.NewWriterSize(raw, 512), conn: raw}
		body(ctx, w)
		_ = w.Flush()
	})
}

// hijackRaw writes c's response head on the connection and runs body on
// it once the handler has returned, then closes it.
func hijackRaw(c *fiber.Ctx, body func(raw net.Conn)) {
	c.Status(fiber.StatusOK)
	head := responseHead(c)
	rc := c.Context()
	// The connection itself, not the one fasthttp hands the hijack
	// handler: that one reads through a pooled buffer fasthttp takes back
	// (and nils) as soon as the handler returns, while a read of ours may
	// still be returning.
	raw := rc.Conn()
	keep := c.App().Server().KeepHijackedConns
	rc.HijackSetNoResponse(true)
	rc.Hijack(func(net.Conn) {
		// The handler returns at once, so fasthttp frees the request's
		// context and buffers now rather than when the stream ends (a few
		// KB a stream), when the server keeps hijacked connections open
		// (KeepHijackedConns, set by httpx.NewApp): the stream's own
		// goroutine closes it. Otherwise the stream runs in the handler.
		run := func() {
			defer raw.Close()
			// A failed write leaves body's writes to fail too: body still
			// runs, and releases what the stream holds.
			_ = raw.SetWriteDeadline(time.Now().Add(writeTimeout))
			_, _ = raw.Write(head)
			body(raw)
		}
		if keep {
			go run()
		} else {
			run()
		}
	})
}

// Loop is a stream served by one goroutine (see OpenLoop).
type Loop struct {
	// Bind hands over wake, which makes the stream's goroutine look at
	// once; safe to call from any goroutine, never blocks. Called first.
	Bind func(wake func())
	// Pending reports whether Step has something to do.
	Pending func() bool
	// Step writes what is pending; done ends the stream (after a flush).
	Step func(w *Writer) (done bool)
	// Beat runs when the heartbeat interval passed with nothing written,
	// and at Due: it writes the heartbeat, or ends the stream (done).
	Beat func(w *Writer) (done bool)
	// Due, when set, is a time at which Beat must run even if the
	// heartbeat is not due (a ticket link's expiry); zero for none. It is
	// asked again after every Step and Beat, so it may move. The
	// connection's read deadline is its timer: no timer of its own, and
	// no poll.
	Due func() time.Time
	// Close runs when the stream ends, whatever ended it.
	Close func()
}

// OpenLoop answers c as an event stream served by one goroutine and no
// timer of its own: the goroutine waits in a read of the connection, whose
// read deadline is both the heartbeat's timer and the wake-up (wake moves
// it to the past). A read that returns otherwise means the client went
// away (or sent something, which no EventSource does): the stream ends at
// once. So an idle stream costs its connection, one parked goroutine and
// what l holds.
func OpenLoop(c *fiber.Ctx, retry, heartbeat time.Duration, l Loop) {
	if retry <= 0 {
		retry = DefaultRetry
	}
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	SetHeaders(c)
	hijackRaw(c, func(raw net.Conn) {
		defer l.Close()
		w := &Writer{w: bufio.NewWriterSize(raw, 512), conn: raw}
		_, _ = w.w.WriteString("retry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\n: connected\n\n")
		l.Bind(func() { _ = raw.SetReadDeadline(past) })
		last := time.Now()
		var beatAt time.Time // when Beat last ran
		var b [1]byte
		for {
			done := l.Step(w)
			if w.w.Buffered() > 0 {
				if !w.Flush() {
					return
				}
				last = time.Now()
			}
			if done {
				return
			}
			// A due time makes Beat run once: if Beat lets it pass (the
			// stream goes on), it is not due again, never a busy loop.
			var due time.Time
			if l.Due != nil {
				if d := l.Due(); d.After(beatAt) {
					due = d
				}
			}
			if now := time.Now(); now.Sub(last) >= heartbeat || (!due.IsZero() && !now.Before(due)) {
				done := l.Beat(w)
				if !w.Flush() || done {
					return
				}
				last = time.Now()
				beatAt, due = last, time.Time{}
			}
			wakeAt := last.Add(heartbeat)
			if !due.IsZero() && due.Before(wakeAt) {
				wakeAt = due
			}
			_ = raw.SetReadDeadline(wakeAt)
			// After the deadline is set: what came before it is seen here,
			// what comes after moves it.
			if l.Pending() {
				continue
			}
			n, err := raw.Read(b[:])
			if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
		}
	})
}

// past is a read deadline that has passed: it wakes a read at once.
var past = time.Unix(1, 0)

// responseHead is the status line and headers of c's response, without a
// length: the stream's.
func responseHead(c *fiber.Ctx) []byte {
	h := &c.Response().Header
	b := make([]byte, 0, 512)
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(h.StatusCode()), 10)
	b = append(b, ' ')
	b = append(b, utils.StatusMessage(h.StatusCode())...)
	b = append(b, "\r\n"...)
	for k, v := range h.All() {
		switch string(k) {
		case fiber.HeaderContentLength, fiber.HeaderTransferEncoding, fiber.HeaderConnection:
			continue
		}
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Connection: close\r\n\r\n"...)
	return b
}
