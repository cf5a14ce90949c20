package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuthChannel is the NOTIFY channel on which the triggers of migration 0060
// announce every committed change to an account or an API key.
const AuthChannel = "qms_auth"

// AuthListener tells a process that authentication data changed in another
// one: it LISTENs on AuthChannel, on a connection of its own, and calls
// forget for every notification. On each (re)connection it calls forget
// too, since changes committed while it was not listening sent nothing it
// heard; the accounts service's short cache TTL covers the gap meanwhile.
type AuthListener struct {
	db  *DB
	log *slog.Logger
}

// NewAuthListener builds the listener on db's connection settings.
func NewAuthListener(db *DB, log *slog.Logger) *AuthListener {
	return &AuthListener{db: db, log: log}
}

// Run listens until ctx ends, reconnecting after a failure.
func (l *AuthListener) Run(ctx context.Context, forget func()) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx, forget)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("auth listener: reconnecting", "error", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (l *AuthListener) listen(ctx context.Context, forget func()) error {
	conn, err := pgx.ConnectConfig(ctx, l.db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return wrap(err, "auth: connect to listen")
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+AuthChannel); err != nil {
		return wrap(err, "auth: listen")
	}
	forget()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return wrap(err, "auth: wait for notification")
		}
		forget()
	}
}
