package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// dbFaultLoad runs creates (each with an idempotency key, sent again on a
// 503 as a client would, up to three times) and reads of the turns made,
// from a few workers, until stop closes. Every answer is recorded.
type dbFaultLoad struct {
	mu    sync.Mutex
	calls []faultCall
	turns []string // acknowledged creates
	wg    sync.WaitGroup
	stop  chan struct{}
}

func startDBFaultLoad(a *apptest.App, run, prefix string, workers int) *dbFaultLoad {
	l := &dbFaultLoad{stop: make(chan struct{})}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				key := fmt.Sprintf("%s-%d-%06d", prefix, w, i)
				for attempt := 0; attempt < 3; attempt++ {
					c := faultCall{key: key, sent: time.Now()}
					r := takeTurn(a, run, map[string]any{"idempotencyKey": key})
					c.answers, c.status, c.retry = time.Now(), r.Status, r.Header.Get("Retry-After")
					var body struct {
						ID    string
						Error struct{ Code string }
					}
					_ = json.Unmarshal(r.Body, &body)
					c.turnID, c.code = body.ID, body.Error.Code
					l.mu.Lock()
					l.calls = append(l.calls, c)
					if c.status == http.StatusCreated {
						l.turns = append(l.turns, c.turnID)
					}
					var read string
					if n := len(l.turns); n > 0 {
						read = l.turns[(i*7+w)%n]
					}
					l.mu.Unlock()
					if read != "" {
						rc := faultCall{key: "read " + read, sent: time.Now()}
						rr := a.API(http.MethodGet, "/turns/"+read, nil)
						rc.answers, rc.status, rc.retry, rc.code = time.Now(), rr.Status, rr.Header.Get("Retry-After"), rr.ErrorCode()
						l.mu.Lock()
						l.calls = append(l.calls, rc)
						l.mu.Unlock()
					}
					if c.status != http.StatusServiceUnavailable {
						break
					}
				}
			}
		}()
	}
	return l
}

func (l *dbFaultLoad) end() {
	close(l.stop)
	l.wg.Wait()
}

// check asserts the load's answers across a fault lasting from faultAt to
// backAt: only 201, 200 and 503 SERVICE_UNAVAILABLE with Retry-After, some
// 503s, a create acknowledged within five seconds of backAt and every
// create after that second acknowledged, and every acknowledged turn kept.
func (l *dbFaultLoad) check(t *testing.T, a *apptest.App, faultAt, backAt time.Time) {
	t.Helper()
	statuses := map[int]int{}
	var firstOK time.Time
	for _, c := range l.calls {
		statuses[c.status]++
		switch c.status {
		case http.StatusCreated, http.StatusOK:
			if c.status == http.StatusCreated && c.sent.After(backAt) && (firstOK.IsZero() || c.answers.Before(firstOK)) {
				firstOK = c.answers
			}
		case http.StatusServiceUnavailable:
			if c.code != "SERVICE_UNAVAILABLE" || c.retry != "2" {
				t.Errorf("%s: a 503 with code %q and Retry-After %q", c.key, c.code, c.retry)
			}
		default:
			t.Errorf("%s: answered %d %s", c.key, c.status, c.code)
		}
	}
	t.Logf("%d requests: %v; fault lasted %v", len(l.calls), statuses, backAt.Sub(faultAt).Round(time.Millisecond))
	if statuses[http.StatusServiceUnavailable] == 0 {
		t.Error("no request met the fault")
	}
	if firstOK.IsZero() {
		t.Fatal("no create succeeded after the database was back")
	}
	t.Logf("first create acknowledged %v after the database was back", firstOK.Sub(backAt).Round(time.Millisecond))
	if d := firstOK.Sub(backAt); d > 5*time.Second {
		t.Errorf("writes came back %v after the database", d)
	}
	late := 0
	for _, c := range l.calls {
		if c.sent.After(firstOK.Add(time.Second)) && c.status != http.StatusCreated && c.status != http.StatusOK {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d requests failed more than a second after writes came back", late)
	}
	for _, id := range l.turns {
		a.API(http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, nil)
	}
}

// adminConn connects to the server of dbURL as its administrator (the
// server's own postgres database), for ALTER DATABASE and
// pg_terminate_backend on the test's database.
func adminConn(t *testing.T, dbURL string) (conn *pgx.Conn, dbName string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName = strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	q := u.Query()
	q.Del("target_session_attrs")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err = pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, dbName
}

func adminExec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// terminateBackends ends every session on the database, as a maintenance
// window or a demotion does.
func terminateBackends(t *testing.T, conn *pgx.Conn, db string) {
	t.Helper()
	adminExec(t, conn, fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' AND pid <> pg_backend_pid()`, db))
}

func faultApp(t *testing.T, dbURL string) *apptest.App {
	return apptest.PostgresAt(t, dbURL, apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 1_000_000
		c.HTTP.RequestTimeout = 3 * time.Second
		c.Database.AcquireTimeout = time.Second
	}))
}

// readyz is GET /readyz's status and storage (checked against the
// OpenAPI document, as every exchange of apptest).
func readyz(t *testing.T, a *apptest.App) (int, string) {
	t.Helper()
	r := a.Do(http.MethodGet, "/readyz", nil, nil)
	var body struct{ Status, Storage string }
	_ = json.Unmarshal(r.Body, &body)
	return r.Status, body.Storage
}

// TestDatabaseNotAcceptingConnections: the database refuses new
// connections for four seconds (ALLOW_CONNECTIONS false, SQLSTATE 55000 at
// connect, as during maintenance) and its sessions are ended (57P01):
// every answer meanwhile is 503 with Retry-After, never 500, and writes
// come back by themselves.
func TestDatabaseNotAcceptingConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("refuses connections to a database for seconds")
	}
	dbURL := pgtest.URL(t)
	admin, db := adminConn(t, dbURL)
	a := faultApp(t, dbURL)
	_, _, run := setupQueue(t, a, nil)
	t.Cleanup(func() { adminExec(t, admin, fmt.Sprintf(`ALTER DATABASE %q ALLOW_CONNECTIONS true`, db)) })

	load := startDBFaultLoad(a, run, "refusing", 4)
	time.Sleep(1500 * time.Millisecond)
	faultAt := time.Now()
	adminExec(t, admin, fmt.Sprintf(`ALTER DATABASE %q ALLOW_CONNECTIONS false`, db))
	terminateBackends(t, admin, db)
	time.Sleep(4 * time.Second)
	if status, _ := readyz(t, a); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz answered %d while the database refused connections", status)
	}
	adminExec(t, admin, fmt.Sprintf(`ALTER DATABASE %q ALLOW_CONNECTIONS true`, db))
	backAt := time.Now()
	time.Sleep(5 * time.Second)
	load.end()
	load.check(t, a, faultAt, backAt)
	if status, _ := readyz(t, a); status != http.StatusOK {
		t.Errorf("/readyz answered %d after the database was back", status)
	}
}

// TestReadOnlyDatabase: the database turns read-only under a running
// process (default_transaction_read_only for its new sessions, its old
// ones ended, as a primary demoted to a standby under the same address):
// every answer is 503, never 500, /readyz answers 503 "read-only", and
// once it takes writes again they succeed without a restart.
//
// With target_session_attrs=any in the URL the process connects to the
// read-only database anyway: its writes fail with SQLSTATE 25006, answered
// 503, reads go on; once the database takes writes the pooled read-only
// sessions are discarded and writes succeed.
func TestReadOnlyDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a database read-only for seconds")
	}
	for _, tc := range []struct{ name, query string }{
		{"writable connections asked by default", ""},
		{"target_session_attrs=any", "target_session_attrs=any"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbURL := pgtest.URL(t)
			admin, db := adminConn(t, dbURL)
			if tc.query != "" {
				dbURL += "&" + tc.query
			}
			a := faultApp(t, dbURL)
			_, _, run := setupQueue(t, a, nil)
			t.Cleanup(func() {
				adminExec(t, admin, fmt.Sprintf(`ALTER DATABASE %q RESET default_transaction_read_only`, db))
			})

			load := startDBFaultLoad(a, run, "readonly", 4)
			time.Sleep(1500 * time.Millisecond)
			faultAt := time.Now()
			adminExec(t, admin, fmt.Sprintf(`ALTER DATABASE %q SET default_transaction_read_only = on`, db))
			terminateBackends(t, admin, db)
			time.Sleep(4 * time.Second)
			if status, storage := readyz(t, a); status != http.StatusServiceUnavailable || storage != "read-only" {
				t.Errorf("/readyz while read-only: %d %q, want 503 read-only", status, storage)
			}
			adminExec(t, admin, fmt.Sprintf(`ALTER DATABASE %q RESET default_transaction_read_only`, db))
			backAt := time.Now()
			time.Sleep(5 * time.Second)
			load.end()
			load.check(t, a, faultAt, backAt)
			if status, storage := readyz(t, a); status != http.StatusOK {
				t.Errorf("/readyz after: %d %q", status, storage)
			}
		})
	}
}
