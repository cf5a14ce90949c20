package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StartupError is a database that cannot be used at start-up, said in one
// line an operator can act on: the cause and what to change (the database
// URL's setting is named by whoever reports it, QMS_DATABASE_URL for the
// service). Err keeps pgx's error for errors.Is and errors.As; Unavailable
// still recognises a connection that could not be made through it.
type StartupError struct {
	Msg string
	Err error
}

func (e *StartupError) Error() string { return e.Msg }
func (e *StartupError) Unwrap() error { return e.Err }

// urlForm is the URL's form, shown with a URL that cannot be parsed.
const urlForm = "postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=disable (several hosts: postgres://H1:P1,H2:P2/DATABASE)"

// parseError is the start-up error of a URL pgx cannot parse. pgx's own
// message hides the password.
func parseError(err error) error {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		msg = pe.Error()
	}
	return &StartupError{Msg: "not a valid PostgreSQL URL: " + msg + "; the form is " + urlForm, Err: err}
}

// startupError turns the failure of Open's first connection into one line
// naming its cause: a database that does not exist, credentials refused,
// a host that cannot be reached, a server that is read-only.
func startupError(cfg *pgxpool.Config, err error) error {
	cc := cfg.ConnConfig
	where := addresses(cc.Config)
	var pg *pgconn.PgError
	var ne net.Error
	var dns *net.DNSError
	switch {
	case errors.As(err, &pg) && pg.Code == "3D000":
		return &StartupError{Err: err, Msg: fmt.Sprintf("database %q does not exist on %s: create it (createdb %s) or name an existing database in the URL",
			cc.Database, where, cc.Database)}
	case errors.As(err, &pg) && (pg.Code == "28P01" || pg.Code == "28000"):
		return &StartupError{Err: err, Msg: fmt.Sprintf("%s refused user %q: %s (SQLSTATE %s): fix the user or password in the URL, or the server's pg_hba.conf",
			where, cc.User, pg.Message, pg.Code)}
	case errors.As(err, &pg) && (pg.Code == "57P03" || pg.Code == "55000" || strings.HasPrefix(pg.Code, "53")):
		return &StartupError{Err: err, Msg: fmt.Sprintf("PostgreSQL at %s does not accept connections now: %s (SQLSTATE %s): start qms again once it does",
			where, pg.Message, pg.Code)}
	case errors.As(err, &pg):
		return &StartupError{Err: err, Msg: fmt.Sprintf("PostgreSQL at %s refused the connection: %s (SQLSTATE %s)", where, pg.Message, pg.Code)}
	case errors.Is(err, pgconn.ErrReadOnlyConnection):
		return &StartupError{Err: err, Msg: fmt.Sprintf("no writable PostgreSQL at %s (read-only, or a standby): name the primary, list every node of the cluster (postgres://H1:P1,H2:P2/DATABASE), or add target_session_attrs=any to accept a read-only server", where)}
	case errors.As(err, &dns):
		return &StartupError{Err: err, Msg: fmt.Sprintf("cannot resolve the host %q: fix the host in the URL", dns.Name)}
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return &StartupError{Err: err, Msg: fmt.Sprintf("cannot reach PostgreSQL at %s: no answer in time: check the host and port in the URL, and that a firewall lets them through", where)}
	case errors.As(err, &ne):
		return &StartupError{Err: err, Msg: fmt.Sprintf("cannot reach PostgreSQL at %s: %s: is the server running there? fix the host and port in the URL", where, rootMessage(err))}
	}
	return &StartupError{Err: err, Msg: fmt.Sprintf("cannot use PostgreSQL at %s/%s: %s", where, cc.Database, rootMessage(err))}
}

// addresses lists the URL's host:port pairs.
func addresses(c pgconn.Config) string {
	seen := map[string]bool{}
	var out []string
	add := func(host string, port uint16) {
		a := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if strings.HasPrefix(host, "/") {
			a = host + " (socket, port " + strconv.Itoa(int(port)) + ")"
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	add(c.Host, c.Port)
	for _, f := range c.Fallbacks {
		add(f.Host, f.Port)
	}
	return strings.Join(out, ", ")
}

// rootMessage is the innermost error's text on one line: what the network
// said, without pgx's prefixes.
func rootMessage(err error) string {
	for {
		next := errors.Unwrap(err)
		if joined, ok := err.(interface{ Unwrap() []error }); ok && len(joined.Unwrap()) > 0 {
			next = joined.Unwrap()[0] // each address's failure: the first says enough
		}
		if next == nil {
			break
		}
		err = next
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
