package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/qms-dev/qms/adapters/postgres"
)

// fakeServer listens on a loopback port and hands every connection to
// serve, speaking PostgreSQL's protocol as a server would: the errors the
// classifier sees are the ones pgx makes of a real server's answers.
func fakeServer(t *testing.T, serve func(b *pgproto3.Backend, c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(pgproto3.NewBackend(c, c), c)
			}()
		}
	}()
	return ln.Addr().String()
}

// startup reads the start-up message, answering an SSL request with "no".
func startup(b *pgproto3.Backend, c net.Conn) bool {
	for {
		m, err := b.ReceiveStartupMessage()
		if err != nil {
			return false
		}
		switch m.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			if _, err := c.Write([]byte("N")); err != nil {
				return false
			}
			continue
		}
		return true
	}
}

// refuseAtConnect answers the start-up with a FATAL of the given SQLSTATE,
// as a server refusing a connection does.
func refuseAtConnect(code, msg string) func(*pgproto3.Backend, net.Conn) {
	return func(b *pgproto3.Backend, c net.Conn) {
		if !startup(b, c) {
			return
		}
		b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
		_ = b.Flush()
	}
}

// acceptThen accepts the connection (trust authentication), answers
// "show transaction_read_only" with readOnly, and answers every other
// simple query with an ERROR (or FATAL, which also closes the connection)
// of the given SQLSTATE.
func acceptThen(readOnly, severity, code, msg string) func(*pgproto3.Backend, net.Conn) {
	return func(b *pgproto3.Backend, c net.Conn) {
		if !startup(b, c) {
			return
		}
		b.Send(&pgproto3.AuthenticationOk{})
		b.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "15.0"})
		b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		_ = b.Flush()
		for {
			m, err := b.Receive()
			if err != nil {
				return
			}
			q, ok := m.(*pgproto3.Query)
			if !ok {
				if _, ok := m.(*pgproto3.Terminate); ok {
					return
				}
				continue
			}
			if q.String == "show transaction_read_only" {
				b.Send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("transaction_read_only"), DataTypeOID: 25, DataTypeSize: -1, TypeModifier: -1}}})
				b.Send(&pgproto3.DataRow{Values: [][]byte{[]byte(readOnly)}})
				b.Send(&pgproto3.CommandComplete{CommandTag: []byte("SHOW")})
				b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
				_ = b.Flush()
				continue
			}
			b.Send(&pgproto3.ErrorResponse{Severity: severity, SeverityUnlocalized: severity, Code: code, Message: msg})
			if severity == "FATAL" {
				_ = b.Flush()
				return
			}
			b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			_ = b.Flush()
		}
	}
}

func fakeURL(addr, extra string) string {
	return fmt.Sprintf("postgres://qms:secret@%s/qms?sslmode=disable&connect_timeout=3%s", addr, extra)
}

// connectErr is what connecting to addr returns, through the pool as the
// service connects.
func connectErr(t *testing.T, url string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, "SELECT 1")
	return err
}

// statementErr is the error of a statement on a connection that was made.
func statementErr(t *testing.T, url string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "INSERT INTO turns DEFAULT VALUES")
	return err
}

// TestUnavailableForEveryConnectionThatCannotBeMade: whatever a server
// answers to a connection it refuses, the fault passes: a 503, never a 500.
func TestUnavailableForEveryConnectionThatCannotBeMade(t *testing.T) {
	for _, tc := range []struct{ code, msg string }{
		{"55000", `database "qms" is not currently accepting connections`},
		{"57P03", "the database system is starting up"},
		{"57P03", "the database system is not yet accepting connections"},
		{"57P01", "terminating connection due to administrator command"},
		{"53300", "sorry, too many clients already"},
		{"53300", "remaining connection slots are reserved for roles with the SUPERUSER attribute"},
		{"28000", `no pg_hba.conf entry for host "127.0.0.1"`},
		{"28P01", `password authentication failed for user "qms"`},
		{"3D000", `database "qms" does not exist`},
		{"XX000", "an internal error of the server at connect time"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			err := connectErr(t, fakeURL(fakeServer(t, refuseAtConnect(tc.code, tc.msg)), ""))
			var pg *pgconn.PgError
			if err == nil || !errors.As(err, &pg) || pg.Code != tc.code {
				t.Fatalf("connect: %v, want the server's %s", err, tc.code)
			}
			if !postgres.Unavailable(err) {
				t.Fatalf("a connection refused with %s (%v) is not a fault", tc.code, err)
			}
		})
	}
}

func TestUnavailableForTransportFaults(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		if err := connectErr(t, fakeURL(addr, "")); !postgres.Unavailable(err) {
			t.Fatalf("refused: %v", err)
		}
	})
	t.Run("reset", func(t *testing.T) {
		addr := fakeServer(t, func(_ *pgproto3.Backend, c net.Conn) {
			_ = c.(*net.TCPConn).SetLinger(0) // close sends RST
		})
		if err := connectErr(t, fakeURL(addr, "")); err == nil || !postgres.Unavailable(err) {
			t.Fatalf("reset: %v", err)
		}
	})
	t.Run("closed mid-handshake", func(t *testing.T) {
		addr := fakeServer(t, func(b *pgproto3.Backend, c net.Conn) { startup(b, c) })
		if err := connectErr(t, fakeURL(addr, "")); err == nil || !postgres.Unavailable(err) {
			t.Fatalf("EOF: %v", err)
		}
	})
	t.Run("TLS", func(t *testing.T) {
		// The server says yes to TLS, then speaks something else.
		addr := fakeServer(t, func(b *pgproto3.Backend, c net.Conn) {
			if _, err := b.ReceiveStartupMessage(); err != nil {
				return
			}
			_, _ = c.Write([]byte("S"))
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
		})
		err := connectErr(t, fmt.Sprintf("postgres://qms@%s/qms?sslmode=require&connect_timeout=3", addr))
		if err == nil || !postgres.Unavailable(err) {
			t.Fatalf("TLS: %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		hold := make(chan struct{})
		t.Cleanup(func() { close(hold) })
		addr := fakeServer(t, func(*pgproto3.Backend, net.Conn) { <-hold })
		err := connectErr(t, fmt.Sprintf("postgres://qms@%s/qms?sslmode=disable&connect_timeout=1", addr))
		if err == nil || !postgres.Unavailable(err) {
			t.Fatalf("timeout: %v", err)
		}
	})
	t.Run("read-only server where a writable one is asked for", func(t *testing.T) {
		addr := fakeServer(t, acceptThen("on", "", "", ""))
		err := connectErr(t, fakeURL(addr, "&target_session_attrs=read-write"))
		if err == nil || !errors.Is(err, pgconn.ErrReadOnlyConnection) || !postgres.Unavailable(err) {
			t.Fatalf("read-only: %v", err)
		}
	})
}

// TestUnavailableForStatementFaults: statements refused because of the
// server's state, not of their own.
func TestUnavailableForStatementFaults(t *testing.T) {
	for _, tc := range []struct{ severity, code, msg string }{
		{"ERROR", "25006", "cannot execute INSERT in a read-only transaction"},
		{"FATAL", "57P01", "terminating connection due to administrator command"},
		{"FATAL", "57P02", "terminating connection because of crash of another server process"},
		{"FATAL", "57P05", "terminating connection due to idle-session timeout"},
		{"FATAL", "08006", "connection failure"},
		{"ERROR", "53100", "could not extend file: No space left on device"},
		{"ERROR", "53200", "out of memory"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			err := statementErr(t, fakeURL(fakeServer(t, acceptThen("off", tc.severity, tc.code, tc.msg)), ""))
			if err == nil || !postgres.Unavailable(err) {
				t.Fatalf("%s: %v is not a fault", tc.code, err)
			}
		})
	}
	// A statement's own mistakes stay errors (500s, or domain errors
	// where a repository maps them).
	for _, code := range []string{"42601", "23505", "22P02", "40001", "55000", "XX000"} {
		t.Run("not "+code, func(t *testing.T) {
			err := statementErr(t, fakeURL(fakeServer(t, acceptThen("off", "ERROR", code, "a statement's own error")), ""))
			if err == nil || postgres.Unavailable(err) {
				t.Fatalf("%s: %v counted as a fault", code, err)
			}
		})
	}
}
