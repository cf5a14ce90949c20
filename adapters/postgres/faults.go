package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable implements ports.FaultClassifier: err says the database could
// not be reached or used for now, rather than that a statement was wrong.
func (db *DB) Unavailable(err error) bool { return Unavailable(err) }

// Unavailable reports whether err is a fault of reaching the database: a
// connection refused, reset or closed under the statement; a server
// shutting down, starting up or out of connection slots (SQLSTATE class 08,
// 57P01-57P03, 53300); a pool wait that ran out (errAcquire); a statement
// cancelled by its context's deadline.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Code, "08") || pg.Code == "57P01" || pg.Code == "57P02" || pg.Code == "57P03" ||
			pg.Code == "53300" || (pg.Code == "57014" && errors.Is(err, context.DeadlineExceeded))
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, errAcquire),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// What pgx reports of a connection that died under it, and a pool
	// being closed, are errors without a type of their own.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") ||
		strings.Contains(msg, "failed to deallocate cached statement")
}
