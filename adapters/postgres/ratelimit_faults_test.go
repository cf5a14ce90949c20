package postgres_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestRateLimiterFailedLeaseAheadGrantsNothing breaks one statement of
// gathered leases ahead partway (450 keys asked for at once go out in
// three statements of up to 200; the second one fails) in the three ways
// it can fail:
//
//   - the server: a row in the middle of the statement raises an error,
//     after the rows before it were written (the statement rolls back, no
//     row reaches the limiter);
//   - the connection: the limiter reads the first 100 rows, then the
//     connection is lost before the statement commits (it rolls back);
//   - after the commit: the limiter reads the first 100 rows, then an
//     error, while the server committed the whole statement (the grants
//     and the hand-backs it carried are in the database).
//
// In every case the limiter grants nothing from the failed statement (the
// rows it read included) nor from the one after it, which it does not
// send; the first statement's leases stand. The failed keys' next
// requests lease on their own path, once each, and are served; their
// headers are the exact count's, less at most what the failed statement
// held back (never more than what is left); and another process spending
// the same keys to the end never takes the window past the limit: nothing
// the limiter served went uncharged, and no hand-back was given twice.
func TestRateLimiterFailedLeaseAheadGrantsNothing(t *testing.T) {
	for _, mode := range []leaseAheadFault{faultInTheServer, faultConnectionLost, faultAfterCommit} {
		t.Run(mode.String(), func(t *testing.T) { failLeaseAhead(t, mode) })
	}
}

// leaseAheadFault is how the second lease-ahead statement fails.
type leaseAheadFault int

const (
	faultInTheServer leaseAheadFault = iota
	faultConnectionLost
	faultAfterCommit
)

func (f leaseAheadFault) String() string {
	return [...]string{"an error in the server partway", "rows read, then the connection lost", "rows read, then an error after the commit"}[f]
}

func failLeaseAhead(t *testing.T, mode leaseAheadFault) {
	ctx := context.Background()
	const (
		keys     = 450
		limit    = 120 // slices of at most 2
		sliceCap = 2
		poison   = 300 // the key whose row fails the server's statement
	)
	key := func(k int) string { return fmt.Sprintf("key-%03d", k) } // keys in the order they are asked for
	dbURL := pgtest.URL(t)
	direct := openDB(t, dbURL)
	proxy := newFaultProxy(t, dbURL)
	a := postgres.NewRateLimiter(openDB(t, proxy.url))
	b := postgres.NewRateLimiter(direct)
	exact := memory.NewRateLimiter()
	zero := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	logs := make([]allowedLog, keys)

	// aAllows spends one request of key k through a at at, checks it
	// against the exact count (within what a failed lease may have held
	// back) and returns how many times it waited for the database.
	aAllows := func(k int, at time.Time, heldBack int) int64 {
		t.Helper()
		waits := a.WaitsForTest()
		got, err := a.Allow(ctx, key(k), limit, at)
		if err != nil {
			t.Fatalf("%s at %s: %v", key(k), at.Format(time.StampMilli), err)
		}
		want, _ := exact.Allow(ctx, key(k), limit, at)
		if got.Allowed != want.Allowed || got.Limit != want.Limit || got.Reset != want.Reset ||
			got.Remaining > want.Remaining || got.Remaining < want.Remaining-heldBack {
			t.Fatalf("%s at %s: got %+v, want %+v (Remaining at most %d lower)", key(k), at.Format(time.StampMilli), got, want, heldBack)
		}
		if got.Allowed {
			logs[k].at = append(logs[k].at, at)
		}
		return a.WaitsForTest() - waits
	}

	// Seconds 0 and 1: three requests of every key a second, so every key
	// is busy and has its slice of second 2 leased ahead.
	for sec := range 2 {
		for i := range 3 {
			for k := range keys {
				aAllows(k, zero.Add(time.Duration(sec)*time.Second+time.Duration(100+300*i)*time.Millisecond), 0)
			}
		}
		a.SettleForTest()
	}
	// Second 2: the first request of every key takes its slice and asks
	// for second 3's ahead, all in one gathering: three statements.
	statements := a.LeaseStatementsForTest()
	switch mode {
	case faultInTheServer:
		failRowOf(t, direct, key(poison))
	case faultConnectionLost, faultAfterCommit:
		proxy.breakNext(1, 100, mode == faultAfterCommit)
	}
	for k := range keys {
		if w := aAllows(k, zero.Add(2*time.Second+100*time.Millisecond), 0); w != 0 {
			t.Fatalf("%s waited in second 2: its slice was not leased ahead", key(k))
		}
	}
	a.SettleForTest()
	if n := a.LeaseStatementsForTest() - statements; n != 2 {
		t.Fatalf("%d lease-ahead statements sent, want 2 (the first, the failed one; not the third)", n)
	}
	switch mode {
	case faultInTheServer:
		clearFault(t, direct)
	case faultConnectionLost, faultAfterCommit:
		if !proxy.broke() {
			t.Fatal("the proxy broke no statement")
		}
	}

	// What the database charged to second 3: the first statement's
	// leases, and the failed one's only if it committed.
	charged := chargedTo(t, direct, zero.Unix()+3)
	for k := range keys {
		var want bool
		switch {
		case k < 200:
			want = true
		case k < 400:
			want = mode == faultAfterCommit
		}
		if got := charged[key(k)] > 0; got != want {
			t.Fatalf("%s: second 3 charged %d in the database, want charged %v", key(k), charged[key(k)], want)
		}
	}

	// Second 3: the keys of the failed and the unsent statements lease on
	// the request's path, once, and are served.
	for i := range 3 {
		for k := range keys {
			w := aAllows(k, zero.Add(3*time.Second+time.Duration(100+300*i)*time.Millisecond), 2*sliceCap)
			if i > 0 {
				continue
			}
			switch {
			case k < 200 && w != 0:
				t.Fatalf("%s waited in second 3, though its lease ahead landed", key(k))
			case k >= 200 && w != 1:
				t.Fatalf("%s waited %d times for its first request of second 3, want once (its own lease)", key(k), w)
			}
		}
	}
	a.SettleForTest()

	// Some keys of each statement: one more request in second 5 (whose
	// lease hands back what a held unused of seconds 3 and 4, and leases
	// one: a holds nothing of the key after it), then another process
	// spends what is left of them: no 60 s may hold more than the limit.
	for _, k := range []int{100, 250, 299, poison, 350, 420} {
		aAllows(k, zero.Add(5*time.Second), 2*sliceCap)
		at := zero.Add(5*time.Second + 500*time.Millisecond)
		for {
			d, err := b.Allow(ctx, key(k), limit, at)
			if err != nil {
				t.Fatal(err)
			}
			inWindow := len(logs[k].at)
			if left := limit - inWindow; d.Remaining > left || d.Remaining < left-4*sliceCap {
				t.Fatalf("%s, the other process: Remaining %d, but %d left (%d less held back)", key(k), d.Remaining, left, 4*sliceCap)
			}
			if !d.Allowed {
				if !d.Reset.After(at) {
					t.Fatalf("%s refused with a Reset not after it: %+v", key(k), d)
				}
				break
			}
			logs[k].at = append(logs[k].at, at)
		}
		logs[k].check(t, limit)
		if n := len(logs[k].at); n < limit-4*sliceCap {
			t.Fatalf("%s: %d allowed in all, want at least %d", key(k), n, limit-4*sliceCap)
		}
	}
}

// failRowOf makes the lease-ahead statement fail when it reaches key's
// row (a trigger, only for that statement: the request path's lease of
// the key goes through).
func failRowOf(t *testing.T, db *postgres.DB, key string) {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), fmt.Sprintf(`
CREATE FUNCTION fail_lease_ahead() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.key = %s AND current_query() LIKE '%%rate limit lease ahead%%' THEN
		RAISE EXCEPTION 'injected fault at %%', NEW.key;
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER fail_lease_ahead BEFORE INSERT OR UPDATE ON rate_limits FOR EACH ROW EXECUTE FUNCTION fail_lease_ahead();`,
		"'"+key+"'"))
	if err != nil {
		t.Fatal(err)
	}
}

func clearFault(t *testing.T, db *postgres.DB) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `DROP TRIGGER fail_lease_ahead ON rate_limits; DROP FUNCTION fail_lease_ahead()`); err != nil {
		t.Fatal(err)
	}
}

// chargedTo is, per key, what the database counts in second sec's bucket.
func chargedTo(t *testing.T, db *postgres.DB, sec int64) map[string]int {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(),
		`SELECT key, c FROM rate_limits, unnest(secs, counts) AS b(s, c) WHERE s = $1`, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			k string
			c int
		)
		if err := rows.Scan(&k, &c); err != nil {
			t.Fatal(err)
		}
		out[k] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// faultProxy stands between a pool and the real server, passing the
// protocol's messages through, and breaks one lease-ahead statement when
// told to (breakNext): it lets rows of its rows through to the client,
// then either has the server commit and tells the client of an error
// instead of the rest, or turns the statement's Sync into a Flush (the
// server runs it, answers, and waits for a commit that never comes), tells
// the client of a lost connection and closes both sides (the server rolls
// the statement back).
type faultProxy struct {
	url string

	mu     sync.Mutex
	skip   int // lease-ahead statements to pass before the broken one; -1: none to break
	rows   int
	commit bool
	done   bool
}

func newFaultProxy(t *testing.T, dbURL string) *faultProxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	server := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	u.Host = ln.Addr().String()
	p := &faultProxy{url: u.String(), skip: -1}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", server)
			if err != nil {
				c.Close()
				continue
			}
			pc := &proxyConn{p: p, client: c, server: s, marked: map[string]bool{}}
			go pc.clientToServer()
			go pc.serverToClient()
		}
	}()
	return p
}

// breakNext breaks the lease-ahead statement after the next skip ones.
func (p *faultProxy) breakNext(skip, rows int, commit bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skip, p.rows, p.commit, p.done = skip, rows, commit, false
}

// broke reports whether a statement was broken.
func (p *faultProxy) broke() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// proxyConn is one client connection and its server connection.
type proxyConn struct {
	p              *faultProxy
	client, server net.Conn
	marked         map[string]bool // prepared statements of the lease ahead

	mu sync.Mutex
	// breaking is set from the broken statement's Bind until its answer
	// has been broken; rows and commit are the proxy's at that moment.
	breaking bool
	rows     int
	commit   bool
}

// readMessage reads one protocol message: its type (0 for the untyped
// start-up) and the whole of it as read.
func readMessage(r io.Reader, typed bool) (byte, []byte, error) {
	head := make([]byte, 5)
	if !typed {
		head = head[1:]
	}
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(head[len(head)-4:])) - 4
	msg := make([]byte, len(head)+n)
	copy(msg, head)
	if _, err := io.ReadFull(r, msg[len(head):]); err != nil {
		return 0, nil, err
	}
	if !typed {
		return 0, msg, nil
	}
	return head[0], msg, nil
}

func cstrings(body []byte, n int) []string {
	var out []string
	for range n {
		i := bytes.IndexByte(body, 0)
		if i < 0 {
			break
		}
		out = append(out, string(body[:i]))
		body = body[i+1:]
	}
	return out
}

func (c *proxyConn) clientToServer() {
	defer c.server.Close()
	typed := false
	for {
		typ, msg, err := readMessage(c.client, typed)
		if err != nil {
			return
		}
		typed = true
		switch typ {
		case 'P': // Parse: statement name, query
			if s := cstrings(msg[5:], 2); len(s) == 2 {
				c.marked[s[0]] = strings.Contains(s[1], "rate limit lease ahead")
			}
		case 'B': // Bind: portal, statement name
			if s := cstrings(msg[5:], 2); len(s) == 2 && c.marked[s[1]] {
				c.p.mu.Lock()
				if c.p.skip == 0 {
					c.mu.Lock()
					c.breaking, c.rows, c.commit = true, c.p.rows, c.p.commit
					c.mu.Unlock()
					c.p.done = true
				}
				if c.p.skip >= 0 {
					c.p.skip--
				}
				c.p.mu.Unlock()
			}
		case 'S': // Sync: the implicit transaction commits
			c.mu.Lock()
			if c.breaking && !c.commit {
				msg = []byte{'H', 0, 0, 0, 4} // Flush: the answer, and no commit
			}
			c.mu.Unlock()
		}
		if _, err := c.server.Write(msg); err != nil {
			return
		}
	}
}

func (c *proxyConn) serverToClient() {
	defer c.client.Close()
	dropping := false
	for {
		typ, msg, err := readMessage(c.server, true)
		if err != nil {
			return
		}
		c.mu.Lock()
		breaking, rows, commit := c.breaking, c.rows, c.commit
		if breaking && (typ == 'D' || typ == 'C') {
			if typ == 'D' && rows > 0 {
				c.rows--
				c.mu.Unlock()
				if _, err := c.client.Write(msg); err != nil {
					return
				}
				continue
			}
			// The rows let through are out: the rest is an error.
			c.breaking = false
			c.mu.Unlock()
			if !commit {
				_, _ = c.client.Write(errorResponse("FATAL", "08006", "injected fault: connection lost before the commit"))
				c.server.Close()
				return
			}
			if _, err := c.client.Write(errorResponse("ERROR", "XX000", "injected fault after the commit")); err != nil {
				return
			}
			dropping = true
			continue
		}
		c.mu.Unlock()
		if dropping {
			if typ != 'Z' {
				continue
			}
			dropping = false
		}
		if _, err := c.client.Write(msg); err != nil {
			return
		}
	}
}

// errorResponse is an ErrorResponse message.
func errorResponse(severity, code, message string) []byte {
	var body bytes.Buffer
	for _, f := range []struct {
		t byte
		v string
	}{{'S', severity}, {'V', severity}, {'C', code}, {'M', message}} {
		body.WriteByte(f.t)
		body.WriteString(f.v)
		body.WriteByte(0)
	}
	body.WriteByte(0)
	msg := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[1:], uint32(4+body.Len()))
	return append(msg, body.Bytes()...)
}
