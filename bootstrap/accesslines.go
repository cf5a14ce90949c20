package bootstrap

import (
	"context"
	"log/slog"
	"sync"

	"github.com/qms-dev/qms/adapters/http/httpx"
)

// accessLines is the process's JSON handler (NewLogger's, with no
// attributes or groups) writing the access lines itself
// (httpx.AccessHandler): the bytes slog's handler writes for the record,
// appended to a pooled buffer and handed to the log buffer, without the
// record's attributes, the handler's state and its lock (about 8 % of a
// memory-mode GET's CPU, issue 16). Any other record goes to the handler.
type accessLines struct {
	slog.Handler
	buf *logBuffer
}

// lineBuffers hold access lines while they are written; the log buffer
// keeps a copy.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (h accessLines) HandleAccess(_ context.Context, l httpx.AccessLine) (bool, error) {
	bp := lineBuffers.Get().(*[]byte)
	defer lineBuffers.Put(bp)
	b, ok := l.AppendJSON((*bp)[:0])
	*bp = b
	if !ok {
		return false, nil
	}
	_, err := h.buf.Write(b)
	return true, err
}

// WithAttrs and WithGroup return the JSON handler's own: attributes and
// groups change every line, the access line too, which only the handler
// then spells.
func (h accessLines) WithAttrs(as []slog.Attr) slog.Handler { return h.Handler.WithAttrs(as) }

func (h accessLines) WithGroup(name string) slog.Handler { return h.Handler.WithGroup(name) }
