package bootstrap

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/qms-dev/qms/adapters/http/httpx"
)

// Buffering of the process's log. With one access line per request, a
// write(2) per line was 6.6% of a memory-mode GET's CPU under load (issue
// 16, P1): the lines now gather in memory and go out together, at most
// logFlushInterval after the first of them, when logFlushSize bytes wait,
// at once for a record at level ERROR or above, and at the application's
// stop. What a crash of the process can lose is the last
// logFlushInterval of lines below ERROR.
const logFlushSize = 64 << 10

// logFlushInterval is a variable so that a test can make it longer than
// itself.
var logFlushInterval = 100 * time.Millisecond

// logBuffer is an io.Writer that gathers writes and hands them to w in
// order, in fewer and larger writes. It is safe for concurrent use: slog's
// handlers each lock around their writes, but the loggers of a process
// may not share one handler, and the flush runs on a timer.
type logBuffer struct {
	w        io.Writer
	interval time.Duration
	size     int

	mu     sync.Mutex // guards buf, armed, closed
	buf    []byte
	armed  bool // the timer will flush
	closed bool // writes go straight to w
	timer  *time.Timer

	// out serializes the writes to w, so that flushes keep their order;
	// it is taken before mu, never after. spare is the buffer of the
	// previous flush, reused.
	out   sync.Mutex
	spare []byte
}

func newLogBuffer(w io.Writer, interval time.Duration, size int) *logBuffer {
	b := &logBuffer{w: w, interval: interval, size: size, buf: make([]byte, 0, size)}
	b.timer = time.AfterFunc(time.Hour, func() { _ = b.flush(true) })
	b.timer.Stop()
	return b
}

// Write keeps a copy of p for the next flush and reports success; a
// failure of w shows in the flush's error (slog has nothing to do with
// either: a log line that cannot be written is lost, as before).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.out.Lock()
		defer b.out.Unlock()
		return b.w.Write(p)
	}
	b.buf = append(b.buf, p...)
	full := len(b.buf) >= b.size
	if !full && !b.armed {
		b.armed = true
		b.timer.Reset(b.interval)
	}
	b.mu.Unlock()
	if full {
		// Waits for a flush in progress: a writer that cannot keep up
		// slows the loggers down instead of growing the buffer forever.
		_ = b.flush(false)
	}
	return len(p), nil
}

// Flush writes out what waits.
func (b *logBuffer) Flush() error { return b.flush(false) }

func (b *logBuffer) flush(fromTimer bool) error {
	b.out.Lock()
	defer b.out.Unlock()
	b.mu.Lock()
	if fromTimer {
		b.armed = false
	}
	data := b.buf
	b.buf = b.spare[:0]
	b.mu.Unlock()
	b.spare = data
	if len(data) == 0 {
		return nil
	}
	_, err := b.w.Write(data)
	if cap(b.spare) > 4*b.size {
		b.spare = nil // one burst must not keep its memory forever
	}
	return err
}

// Close flushes what waits and lets later writes through unbuffered (the
// last lines of a stopping process are written as they come).
func (b *logBuffer) Close() error {
	b.mu.Lock()
	b.closed = true
	b.armed = false
	b.timer.Stop()
	b.mu.Unlock()
	return b.flush(false)
}

// flushOnError is a slog.Handler that flushes the log buffer right after
// a record at level ERROR or above, so an error (a panic, a failed start)
// is out before whatever may follow it, an exit included.
type flushOnError struct {
	slog.Handler
	buf *logBuffer
}

func (h flushOnError) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelError {
		_ = h.buf.Flush()
	}
	return err
}

// HandleAccess writes an access line through the handler's own
// httpx.AccessHandler, when it has one, flushing after an error's line as
// Handle does.
func (h flushOnError) HandleAccess(ctx context.Context, l httpx.AccessLine) (bool, error) {
	ah, ok := h.Handler.(httpx.AccessHandler)
	if !ok {
		return false, nil
	}
	done, err := ah.HandleAccess(ctx, l)
	if done && l.Level >= slog.LevelError {
		_ = h.buf.Flush()
	}
	return done, err
}

func (h flushOnError) WithAttrs(as []slog.Attr) slog.Handler {
	return flushOnError{h.Handler.WithAttrs(as), h.buf}
}

func (h flushOnError) WithGroup(name string) slog.Handler {
	return flushOnError{h.Handler.WithGroup(name), h.buf}
}
