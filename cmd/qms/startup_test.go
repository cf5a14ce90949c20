package main

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/qms-dev/qms/test/pgtest"
)

// TestStartupErrorsAreOneLine starts `qms serve` on databases it cannot
// use: each time the process exits 1 having written one line, naming the
// setting and the cause, and no dependency-injection trace.
func TestStartupErrorsAreOneLine(t *testing.T) {
	good, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(u *url.URL)) string {
		u := *good
		q := u.Query()
		u.RawQuery = q.Encode()
		change(&u)
		return u.String()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name, url, want string
	}{
		{"database does not exist", with(func(u *url.URL) { u.Path = "/qms_no_such_database" }),
			`QMS_DATABASE_URL: database "qms_no_such_database" does not exist on `},
		{"wrong credentials", with(func(u *url.URL) { u.User = url.UserPassword("qms_no_such_role", "wrong") }),
			`refused user "qms_no_such_role"`},
		{"unreachable host", with(func(u *url.URL) { u.Host = closed }),
			"QMS_DATABASE_URL: cannot reach PostgreSQL at " + closed + ": connection refused"},
		{"bad URL", with(func(u *url.URL) { u.RawQuery = "sslmode=sometimes" }),
			"QMS_DATABASE_URL: not a valid PostgreSQL URL: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("QMS_STORAGE", "postgres")
			t.Setenv("QMS_DATABASE_URL", tc.url)
			t.Setenv("QMS_ADMIN_TOKEN", strings.Repeat("a", 40))
			t.Setenv("QMS_WEBHOOKS_SECRET_KEY", strings.Repeat("s", 40))
			t.Setenv("QMS_HTTP_ADDR", "127.0.0.1:0")
			out := stderrOf(t, func(stderr io.Writer) {
				if code := run([]string{"serve"}, io.Discard, stderr); code != 1 {
					t.Errorf("exit %d, want 1", code)
				}
			})
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("stderr, %d lines, want one containing %q:\n%s", len(lines), tc.want, out)
			}
			if strings.Contains(out, "could not build") || strings.Contains(out, "wrong") || len(out) > 400 {
				t.Fatalf("stderr has the trace, a password or too much: %s", out)
			}
			t.Log(lines[0])
		})
	}
}

// stderrOf runs fn with os.Stderr (where the process logger writes) and
// fn's own stderr writer both captured, and returns what they received.
func stderrOf(t *testing.T, fn func(stderr io.Writer)) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	var buf bytes.Buffer
	func() {
		defer func() { os.Stderr = saved }()
		fn(&buf)
	}()
	w.Close()
	return <-got + buf.String()
}
