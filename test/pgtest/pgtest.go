// Package pgtest gives tests a fresh, fully migrated PostgreSQL database in
// a few tens of milliseconds.
//
// The server is found the way the Makefile finds it: QMS_TEST_DATABASE_URL
// (a postgres:// URL of any database on it, whose role may create
// databases) when set; else the local server, LocalURL, when it answers;
// else a postgres:15 container started with dockertest, once per test
// binary. With none of them, the database tests skip, and Main makes the
// binary fail, so that a plain `go test ./...` cannot look green while they
// did not run, unless the skip was asked for: -short, or
// QMS_TEST_DATABASE_URL=none. Under CI=true they fail instead of skipping.
//
// Each test binary migrates once into a template database named after
// postgres.SchemaFingerprint (so a changed migration makes a new template;
// binaries of several packages share it, guarded by an advisory lock), then
// every New or URL clones it with CREATE DATABASE ... TEMPLATE and drops the
// clone when the test ends.
//
// Use Main from TestMain so the container, if one was started, is removed
// when the binary ends:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Without it the container stops on its own after containerLifetime.
// Templates (qms_tpl_*) stay on a shared server for the next run; the
// databases of a test binary that was killed (qms_t_*) stay too and can be
// dropped by hand.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"

	"github.com/qms-dev/qms/adapters/postgres"
)

// EnvURL names the environment variable holding the test server's URL;
// the value "none" skips the database tests on purpose.
const EnvURL = "QMS_TEST_DATABASE_URL"

// LocalURL is the server tried when EnvURL is unset: the local PostgreSQL,
// as the Makefile finds it with pg_isready.
const LocalURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

const (
	// templateLockKey serialises template builds across test binaries
	// ("qms:tmpl" in ASCII).
	templateLockKey int64 = 0x716d733a746d706c
	// containerLifetime bounds a container left behind by a binary that did
	// not use Main, or was killed.
	containerLifetime = 15 * time.Minute
	// setupTimeout bounds every administrative step.
	setupTimeout = 2 * time.Minute
)

// errUnavailable marks "there is no server to test on", as opposed to a
// server that misbehaves.
var errUnavailable = errors.New("no PostgreSQL server for tests")

var server struct {
	once  sync.Once
	url   string        // a URL of the maintenance database
	admin *pgxpool.Pool // creates and drops databases
	purge func()        // removes the container, when one was started
	err   error
}

// skipped counts the tests skipped for want of a server.
var skipped atomic.Int64

var template struct {
	once sync.Once
	name string
	err  error
}

// Main runs the tests, then removes what the binary started (the
// container, the admin connections) and exits with the tests' code.
func Main(m *testing.M) {
	code := m.Run()
	if n := skipped.Load(); n > 0 {
		asked := testing.Short() || os.Getenv(EnvURL) == "none"
		fmt.Fprintf(os.Stderr, "\n"+
			"*** pgtest: %d tests that need PostgreSQL did NOT run: %v\n"+
			"*** Start the local server (127.0.0.1:5432, user postgres) or set %s;\n"+
			"*** to skip them on purpose, use -short or %s=none.\n\n", n, server.err, EnvURL, EnvURL)
		if code == 0 && !asked {
			code = 1
		}
	}
	if server.admin != nil {
		server.admin.Close()
	}
	if server.purge != nil {
		server.purge()
	}
	os.Exit(code)
}

// New returns an open handle on a fresh, fully migrated database of its
// own, closed and dropped when t ends.
func New(t testing.TB) *postgres.DB {
	t.Helper()
	u := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	db, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// Registered after URL's drop, so it runs before it.
	t.Cleanup(db.Close)
	return db
}

// URL creates a fresh, fully migrated database and returns its URL, for
// code that opens its own connections (a `qms serve` process, say). The
// database is dropped when t ends, connections or not.
func URL(t testing.TB) string {
	t.Helper()
	admin := adminPool(t)
	template.once.Do(func() {
		template.name, template.err = buildTemplate(admin)
	})
	if template.err != nil {
		t.Fatalf("pgtest: build template database: %v", template.err)
	}
	return createDatabase(t, admin, template.name)
}

// EmptyURL creates a fresh database with no schema at all and returns its
// URL, for tests of the migrations themselves. It is dropped when t ends.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return createDatabase(t, adminPool(t), "")
}

func adminPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	server.once.Do(func() {
		server.url, server.admin, server.purge, server.err = connectServer()
	})
	if server.err != nil {
		msg := fmt.Sprintf("pgtest: %v (set %s, for example postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable, or run a Docker engine)", server.err, EnvURL)
		if errors.Is(server.err, errUnavailable) && os.Getenv("CI") != "true" {
			skipped.Add(1)
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	return server.admin
}

func connectServer() (serverURL string, admin *pgxpool.Pool, purge func(), err error) {
	serverURL = os.Getenv(EnvURL)
	if serverURL == "none" {
		return "", nil, nil, fmt.Errorf("%w: %s=none", errUnavailable, EnvURL)
	}
	if serverURL == "" && localAnswers() {
		serverURL = LocalURL
	}
	if serverURL != "" {
		// Test databases are made by swapping the URL's path, which a
		// key=value DSN does not have.
		if u, err := url.Parse(serverURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return "", nil, nil, fmt.Errorf("%s must be a postgres:// URL", EnvURL)
		}
	} else {
		serverURL, purge, err = startContainer()
		if err != nil {
			return "", nil, nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	admin, err = pgxpool.New(ctx, serverURL)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		if admin != nil {
			admin.Close()
		}
		if purge != nil {
			purge()
		}
		return "", nil, nil, fmt.Errorf("connect to test server: %w", err)
	}
	return serverURL, admin, purge, nil
}

// localAnswers tells whether the server at LocalURL accepts a connection.
func localAnswers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, LocalURL)
	if err != nil {
		return false
	}
	_ = conn.Close(ctx)
	return true
}

// startContainer runs postgres:15 tuned for throwaway data (no fsync) and
// waits until it accepts connections.
func startContainer() (serverURL string, purge func(), err error) {
	pool, err := dockertest.NewPool("")
	if err == nil {
		err = pool.Client.Ping()
	}
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s is unset, nothing answers at 127.0.0.1:5432 as postgres, and Docker is unreachable: %v", errUnavailable, EnvURL, err)
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: "postgres",
		Tag:        "15",
		Env:        []string{"POSTGRES_PASSWORD=qms"},
		Cmd: []string{"postgres", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=500"},
	}, func(hc *docker.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = docker.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return "", nil, fmt.Errorf("start postgres container: %w", err)
	}
	purge = func() { _ = pool.Purge(res) }
	_ = res.Expire(uint(containerLifetime.Seconds()))
	serverURL = "postgres://postgres:qms@" + res.GetHostPort("5432/tcp") + "/postgres?sslmode=disable"
	pool.MaxWait = time.Minute
	err = pool.Retry(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
	if err != nil {
		purge()
		return "", nil, fmt.Errorf("wait for postgres container: %w", err)
	}
	return serverURL, purge, nil
}

// buildTemplate makes sure the template database of the current schema
// exists. It migrates into a scratch database and renames it only once
// complete, so a build that crashed leaves no template that looks usable.
func buildTemplate(admin *pgxpool.Pool) (string, error) {
	name := "qms_tpl_" + postgres.SchemaFingerprint()[:16]
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := admin.Acquire(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return "", err
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey); err != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	build := name + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+build+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+build); err != nil {
		return "", err
	}
	db, err := postgres.Open(ctx, withDatabase(server.url, build))
	if err != nil {
		return "", err
	}
	err = db.Migrate(ctx)
	db.Close()
	if err != nil {
		return "", err
	}
	// Nobody needs to connect to a template; refusing connections keeps a
	// stray one from blocking every clone.
	if err := execRetrying(ctx, conn.Conn(), "ALTER DATABASE "+build+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return "", err
	}
	if err := execRetrying(ctx, conn.Conn(), "ALTER DATABASE "+build+" RENAME TO "+name); err != nil {
		return "", err
	}
	return name, nil
}

// createDatabase creates a database, from template when not empty, and
// drops it (closing whatever is still connected) when t ends.
func createDatabase(t testing.TB, admin *pgxpool.Pool, template string) string {
	t.Helper()
	name := "qms_t_" + randomHex(8)
	stmt := "CREATE DATABASE " + name
	if template != "" {
		stmt += " TEMPLATE " + template
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := admin.Acquire(ctx)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	err = execRetrying(ctx, conn.Conn(), stmt)
	conn.Release()
	if err != nil {
		t.Fatalf("pgtest: %s: %v", stmt, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return withDatabase(server.url, name)
}

// execRetrying runs a statement that fails while another session still
// uses the database it names ("object in use"), as happens for a moment
// after a connection closes: the server ends the backend asynchronously.
func execRetrying(ctx context.Context, conn *pgx.Conn, stmt string) error {
	for {
		_, err := conn.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// withDatabase returns serverURL (checked by connectServer) with its
// database replaced by name.
func withDatabase(serverURL, name string) string {
	u, _ := url.Parse(serverURL)
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
