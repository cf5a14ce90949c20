package streamhttp

import (
	"bufio"
	"context"
	"net"
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
	c.Status(fiber.StatusOK)
	head := responseHead(c)
	rc := c.Context()
	// The connection itself, not the one fasthttp hands the hijack
	// handler: that one reads through a pooled buffer fasthttp takes back
	// (and nils) as soon as the handler returns, while the reader below may
	// still be returning from its read.
	raw := rc.Conn()
	rc.HijackSetNoResponse(true)
	rc.Hijack(func(net.Conn) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			var b [1]byte
			_, _ = raw.Read(b[:])
			cancel()
		}()
		w := &Writer{w: bufio.NewWriterSize(raw, 512), conn: raw}
		_, _ = w.w.Write(head)
		body(ctx, w)
		_ = w.Flush()
	})
}

// Open answers c as an event stream and runs body on its connection once
// the handler has returned (see hijack), after the retry: and ": connected"
// lines. ctx ends when the client goes away.
func Open(c *fiber.Ctx, retry time.Duration, body func(ctx context.Context, w *Writer)) {
	if retry <= 0 {
		retry = DefaultRetry
	}
	SetHeaders(c)
	hijack(c, func(ctx context.Context, w *Writer) {
		_, _ = w.w.WriteString("retry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\n: connected\n\n")
		body(ctx, w)
	})
}

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
	h.VisitAll(func(k, v []byte) {
		switch string(k) {
		case fiber.HeaderContentLength, fiber.HeaderTransferEncoding, fiber.HeaderConnection:
			return
		}
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
	})
	b = append(b, "Connection: close\r\n\r\n"...)
	return b
}
