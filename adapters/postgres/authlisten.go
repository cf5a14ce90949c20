package postgres

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuthChannel is the NOTIFY channel on which the triggers of migration 0060
// announce every committed change to an account or an API key.
const AuthChannel = "qms_auth"

// AuthCache is the authentication cache the listener keeps honest (the
// accounts service).
type AuthCache interface {
	// ForgetAuth drops every cached result.
	ForgetAuth()
	// SetNotified says whether every change now reaches ForgetAuth.
	SetNotified(on bool)
}

// listenPing is how often a quiet listener checks its connection: a
// connection that died silently must not leave the cache trusting it for
// long.
const listenPing = time.Second

// AuthListener tells a process that authentication data changed in another
// one: it LISTENs on AuthChannel, on a connection of its own, and calls
// ForgetAuth for every notification. On each (re)connection it calls
// ForgetAuth too, since changes committed while it was not listening sent
// nothing it heard. The cache is told it is notified only while the
// connection is known to be alive (checked every listenPing); otherwise the
// accounts service's short cache TTL covers the gap.
type AuthListener struct {
	db  *DB
	log *slog.Logger
}

// NewAuthListener builds the listener on db's connection settings.
func NewAuthListener(db *DB, log *slog.Logger) *AuthListener {
	return &AuthListener{db: db, log: log}
}

// Run listens until ctx ends, reconnecting after a failure.
func (l *AuthListener) Run(ctx context.Context, cache AuthCache) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx, cache)
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

func (l *AuthListener) listen(ctx context.Context, cache AuthCache) error {
	conn, err := pgx.ConnectConfig(ctx, l.db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return wrap(err, "auth: connect to listen")
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+AuthChannel); err != nil {
		return wrap(err, "auth: listen")
	}
	cache.ForgetAuth()
	cache.SetNotified(true)
	defer cache.SetNotified(false)
	for {
		wait, cancel := context.WithTimeout(ctx, listenPing)
		_, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case err == nil:
			cache.ForgetAuth()
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			// Quiet for a while: make sure the connection still answers.
			ping, cancel := context.WithTimeout(ctx, listenPing)
			err := conn.Ping(ping)
			cancel()
			if err != nil {
				return wrap(err, "auth: ping the listening connection")
			}
		default:
			return wrap(err, "auth: wait for notification")
		}
	}
}
