package notifier

import (
	"context"
	"log/slog"
	"sync"

	"github.com/qms-dev/qms/core/notify"
)

// Log is the outbox sender: it sends nothing, logs each message (the
// number masked) and accepts it, so `make run` shows what would be sent in
// the log and in GET /turns/{turnId}/notifications.
type Log struct {
	log *slog.Logger
	mu  sync.Mutex
	// sent counts the messages, for tests.
	sent int
}

// NewLog builds the outbox on log.
func NewLog(log *slog.Logger) *Log { return &Log{log: log} }

// Provider is "log".
func (l *Log) Provider() string { return "log" }

// Send logs out and accepts it.
func (l *Log) Send(_ context.Context, out notify.Outgoing) (notify.Receipt, error) {
	l.mu.Lock()
	l.sent++
	l.mu.Unlock()
	l.log.Info("notify: outbox (not sent: notify.provider is log)", "message", out.MessageID, "channel", out.Channel,
		"to", notify.Phone(out.To), "template", out.Template, "language", out.Language, "body", out.Body)
	return notify.Receipt{ProviderMessageID: "log-" + out.MessageID}, nil
}

// Sent is how many messages went through the outbox.
func (l *Log) Sent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}
