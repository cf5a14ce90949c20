package postgres

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

// Unavailable reports whether err is a fault of reaching the database, one
// that passes and that a client may retry:
//
//   - a connection that could not be made, whatever the reason the server
//     or the network gave: refused, reset, timed out, TLS, the server
//     starting up or shutting down (57P03), out of connection slots
//     (53300), not accepting connections to the database (55000, during
//     maintenance), a password refused after start-up (28000, 28P01: a
//     rotated secret), a server that is read-only where a writable one was
//     asked for (target_session_attrs). At start-up the same errors are
//     configuration mistakes, reported by StartupError instead;
//   - a connection lost under a statement (SQLSTATE class 08, closed or
//     broken connections, io.ErrUnexpectedEOF);
//   - a server ending sessions (57P01 admin shutdown, 57P02 crash
//     shutdown, 57P05 idle session timeout) or short of resources (class
//     53);
//   - a write on a server that became read-only (25006: a primary demoted
//     to a standby, default_transaction_read_only): the writable server is
//     elsewhere or coming back;
//   - a pool wait that ran out (errAcquire), a statement cancelled by its
//     context's deadline.
//
// The connection is looked at before the SQLSTATE: a FATAL at connect time
// carries the server's code inside the connect error, and any code there is
// a connection that could not be made.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return unavailableCode(pg.Code) || (pg.Code == "57014" && errors.Is(err, context.DeadlineExceeded)) ||
			(pg.Code == "55000" && strings.Contains(pg.Message, "accepting connections"))
	}
	var ne net.Error
	var tlsRecord tls.RecordHeaderError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	switch {
	case errors.As(err, &ne),
		errors.Is(err, errAcquire),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, pgconn.ErrReadOnlyConnection),
		errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.ETIMEDOUT),
		errors.As(err, &tlsRecord), errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalidCert):
		return true
	}
	// What pgx reports of a connection that died under it, and a pool
	// being closed, are errors without a type of their own.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") ||
		strings.Contains(msg, "failed to deallocate cached statement") ||
		strings.Contains(msg, "tls: ")
}

// unavailableCode reports whether a statement's SQLSTATE is a fault of the
// server rather than of the statement.
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case strings.HasPrefix(code, "53"): // insufficient resources (53300 too many connections)
		return true
	}
	switch code {
	case "57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now
		"57P05", // idle_session_timeout
		"25006": // read_only_sql_transaction: the node became read-only
		return true
	}
	return false
}

// readOnly reports whether err is a write refused by a read-only server
// (SQLSTATE 25006).
func readOnly(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "25006"
}
