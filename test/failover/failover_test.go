// Package failover runs qms on a real highly available PostgreSQL
// (pg_auto_failover from Debian's packages: a monitor and two nodes on
// loopback ports) and fails the primary over under a mixed load: what
// clients see, and what survives.
package failover

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgcluster"
)

// call is one HTTP exchange of the load.
type call struct {
	proc     string // a, b (multi-host URL) or c (node1 alone)
	op       string // create, next, complete, read, readyz
	key      string // a create's idempotency key
	turnID   string
	status   int // 0: no HTTP answer
	code     string
	retry    string
	sent     time.Time
	answered time.Time
}

// write reports whether the call is an acknowledged write.
func (c call) write() bool {
	return (c.op == "create" || c.op == "next" || c.op == "complete") && c.status >= 200 && c.status < 300
}

// client talks to one qms process.
type client struct {
	proc, base, key string
	http            *http.Client
}

func (cl *client) do(op, method, path string, body any) call {
	c := call{proc: cl.proc, op: op, sent: time.Now()}
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, cl.base+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.key != "" {
		req.Header.Set("X-API-Key", cl.key)
	}
	resp, err := cl.http.Do(req)
	c.answered = time.Now()
	if err != nil {
		c.code = err.Error()
		return c
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	c.status, c.retry = resp.StatusCode, resp.Header.Get("Retry-After")
	var v struct {
		ID     string
		Status string
		Error  struct{ Code string }
	}
	_ = json.Unmarshal(b, &v)
	c.turnID, c.code = v.ID, v.Error.Code
	if op == "readyz" {
		var rz struct{ Storage string }
		_ = json.Unmarshal(b, &rz)
		c.code = rz.Storage
	}
	return c
}

// recorder keeps every call.
type recorder struct {
	mu    sync.Mutex
	calls []call
	acked []string // turns whose create was acknowledged
}

func (r *recorder) add(c call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	if c.op == "create" && c.status == http.StatusCreated {
		r.acked = append(r.acked, c.turnID)
	}
}

func (r *recorder) someTurn(i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.acked) == 0 {
		return ""
	}
	return r.acked[i%len(r.acked)]
}

// receiver is the webhook endpoint: the first arrival of each (event,
// turn).
type receiver struct {
	mu    sync.Mutex
	first map[string]time.Time
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Event string
		Data  struct{ TurnID string }
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	rc.mu.Lock()
	k := body.Event + " " + body.Data.TurnID
	if _, ok := rc.first[k]; !ok {
		rc.first[k] = time.Now()
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) at(event, turn string) time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.first[event+" "+turn]
}

// TestFailoverUnderLoad: two qms processes on the formation's multi-host
// URL take a mixed load (joins with idempotency keys, retried with the same
// key on 503; clerks calling next and completing; reads; webhooks to a
// local receiver), and a third on node1 alone, while the formation fails
// over (`pg_autoctl perform failover`), the new primary's postmaster is
// killed with SIGKILL, and it fails back. Asserted: never a 500; at most
// 5 s from a fault (the kill, or a failover's first 503) to the first
// acknowledged write (or, when the database itself took longer to take a
// write, which a heavily loaded machine makes it do, at most 1 s after
// it did); every acknowledged write kept; no turn called twice;
// one turn per idempotency key; every event delivered; a tolerance no-show
// scheduled before the failover fires after it; background work created
// after the failovers runs (a forward, a HYBRID join, retention, a
// tolerance no-show: background_test.go); the one-host process answers 503
// (and /readyz 503) while node1 is a standby and writes again once node1 is
// primary, without a restart.
func TestFailoverUnderLoad(tt *testing.T) {
	if testing.Short() {
		tt.Skip("runs a pg_auto_failover formation for about two minutes")
	}
	t := rememberFailures(tt)
	f := pgcluster.StartFormation(t)
	multi := f.URL()
	node1 := f.Nodes[0]
	t.Logf("formation: %s", multi)

	bin := qmsBinary(t)
	rc := &receiver{first: map[string]time.Time{}}
	hooks := httptest.NewServer(rc)
	t.Cleanup(hooks.Close)
	env := []string{
		"QMS_STORAGE=postgres",
		"QMS_ADMIN_TOKEN=" + apptest.AdminToken,
		"QMS_WEBHOOKS_SECRET_KEY=" + apptest.SecretKey,
		"QMS_RATELIMIT_PER_MINUTE=10000000",
		"QMS_WEBHOOKS_ALLOW_PRIVATE=true",
		"QMS_BOOTSTRAP_DEMO=false",
		"QMS_LOG_LEVEL=warn",
		"QMS_HTTP_REQUEST_TIMEOUT=3s",
		"QMS_DATABASE_ACQUIRE_TIMEOUT=1s",
	}
	env = append(env, retentionEnv...)
	migrate := exec.Command(bin, "migrate")
	migrate.Env = append(os.Environ(), append(env, "QMS_DATABASE_URL="+multi)...)
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("qms migrate: %v\n%s", err, out)
	}
	logDir := t.TempDir()
	a := startQMS(t, bin, env, multi, filepath.Join(logDir, "a.log"))
	b := startQMS(t, bin, env, multi, filepath.Join(logDir, "b.log"))
	c := startQMS(t, bin, env, node1.URL(), filepath.Join(logDir, "c.log"))
	t.Cleanup(func() {
		for _, p := range []string{"a", "b", "c"} {
			data, _ := os.ReadFile(filepath.Join(logDir, p+".log"))
			// What River's safety nets did (adapters/riverjobs: orphans.go,
			// watchdog.go), for the measurements.
			t.Logf("qms %s: %d passes requeued jobs fetched and never received, %d watchdog restarts of River", p,
				strings.Count(string(data), "made available again"),
				strings.Count(string(data), "restarting River")+strings.Count(string(data), "starting it again"))
			if t.Failed() {
				t.Logf("--- qms %s log (tail)\n%s", p, tail(string(data), 20))
			}
		}
		if t.Failed() {
			t.Logf("--- the formation\n%s", f.Logs())
		}
	})

	admin := &apptest.App{T: t, BaseURL: a}
	_, key := admin.NewAccount("premium", "all")
	admin.Key = key
	var ent struct{ ID string }
	admin.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &ent)
	var q, tq struct {
		ID   string
		Runs []struct{ ID string }
	}
	admin.API(http.MethodPost, "/queues", map[string]any{"entityId": ent.ID, "name": "Front desk", "type": "TURN",
		"dispatchFlow": map[string]any{"trackService": false}}).Must(http.StatusCreated, &q)
	admin.API(http.MethodPost, "/queues", map[string]any{"entityId": ent.ID, "name": "Pharmacy", "type": "TURN",
		"tolerance": map[string]any{"graceMinutes": 1}}).Must(http.StatusCreated, &tq)
	run, tolRun := q.Runs[0].ID, tq.Runs[0].ID
	bg := &background{t: t, admin: admin}
	bgFwdRun, bgHybridRun, bgTolRun := bg.setUp(ent.ID)
	admin.API(http.MethodPost, "/webhook-endpoints", map[string]any{"url": hooks.URL + "/hook",
		"events": []string{"turn.created", "turn.called", "turn.completed"}}).Must(http.StatusCreated, nil)

	hc := &http.Client{Timeout: 10 * time.Second}
	ca := &client{proc: "a", base: a, key: key, http: hc}
	cb := &client{proc: "b", base: b, key: key, http: hc}
	cc := &client{proc: "c", base: c, key: key, http: hc}
	rec := &recorder{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(every time.Duration, fn func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				fn(i)
			}
		}()
	}
	// Joiners: about 20 a second over both processes, each key sent again
	// on a 503 (or no answer) for up to 20 s, to either process.
	for w := range 6 {
		clients := []*client{ca, cb}
		loop(300*time.Millisecond, func(i int) {
			k := fmt.Sprintf("join-%d-%05d", w, i)
			give := time.Now().Add(20 * time.Second)
			for attempt := 0; ; attempt++ {
				cl := clients[(w+attempt)%2]
				r := cl.do("create", http.MethodPost, "/api/v1/queue-runs/"+run+"/turns", map[string]any{"idempotencyKey": k})
				r.key = k
				rec.add(r)
				if (r.status != 0 && r.status != http.StatusServiceUnavailable) || time.Now().After(give) {
					return
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
	// Clerks: one per process, calling next and completing what it called
	// (the complete retried on 503 until it is answered otherwise).
	for _, cl := range []*client{ca, cb} {
		loop(250*time.Millisecond, func(int) {
			r := cl.do("next", http.MethodPost, "/api/v1/queue-runs/"+run+"/dispatch/next", map[string]any{})
			rec.add(r)
			if !r.write() {
				return
			}
			give := time.Now().Add(20 * time.Second)
			for {
				d := cl.do("complete", http.MethodPost, "/api/v1/turns/"+r.turnID+"/complete", map[string]any{})
				d.turnID = r.turnID
				rec.add(d)
				if (d.status != 0 && d.status != http.StatusServiceUnavailable) || time.Now().After(give) {
					return
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
	// Readers.
	for i, cl := range []*client{ca, cb} {
		loop(200*time.Millisecond, func(n int) {
			if id := rec.someTurn(n*3 + i); id != "" {
				rec.add(cl.do("read", http.MethodGet, "/api/v1/turns/"+id, nil))
			}
		})
	}
	// The one-host process: a create and a /readyz every 300 ms.
	loop(300*time.Millisecond, func(i int) {
		k := fmt.Sprintf("one-host-%05d", i)
		r := cc.do("create", http.MethodPost, "/api/v1/queue-runs/"+run+"/turns", map[string]any{"idempotencyKey": k})
		r.key = k
		rec.add(r)
		rec.add(cc.do("readyz", http.MethodGet, "/readyz", nil))
	})

	// The database as a client of its own sees it: when the multi-host URL
	// leads to a server that takes a write, every 100 ms.
	var probeMu sync.Mutex
	var probes []call
	loop(100*time.Millisecond, func(int) {
		p := call{op: "probe", sent: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, multi)
		if err == nil {
			_, err = conn.Exec(ctx, probeWrite)
			conn.Close(context.Background())
		}
		p.answered = time.Now()
		if err == nil {
			p.status = http.StatusOK
		}
		probeMu.Lock()
		probes = append(probes, p)
		probeMu.Unlock()
	})

	time.Sleep(3 * time.Second)
	// A tolerance no-show due a minute after its call, made now.
	var tolTurn struct{ ID string }
	admin.API(http.MethodPost, "/queue-runs/"+tolRun+"/turns", map[string]any{}).Must(http.StatusCreated, &tolTurn)
	admin.API(http.MethodPost, "/queue-runs/"+tolRun+"/dispatch/next", map[string]any{}).Must(http.StatusCreated, nil)
	calledAt := time.Now()

	var phases []phase
	mark := func(name string, fault func(p *phase)) {
		p := phase{name: name, start: time.Now()}
		fault(&p)
		time.Sleep(8 * time.Second)
		p.end = time.Now()
		phases = append(phases, p)
	}
	var standbyFrom, standbyTo, failedBack time.Time
	mark("perform failover", func(*phase) {
		f.PerformFailover()
		if f.WaitSettled(60*time.Second) == node1 {
			t.Fatal("node1 is still primary after the failover")
		}
		standbyFrom = time.Now() // node1 is a standby from here
	})
	mark("kill -9 of the new primary", func(p *phase) {
		standbyTo = time.Now()
		victim := f.Primary()
		p.fault = time.Now()
		f.KillPostmaster(victim)
		// Its keeper restarts it, or, when that takes longer than the
		// monitor's patience, the monitor fails over to node1. The
		// monitor's table may not show the crash yet: first wait for the
		// database to take a write again.
		waitWritable(t, f, multi, 90*time.Second)
		if p := f.WaitSettled(150 * time.Second); p == node1 {
			t.Log("kill -9: the monitor failed over to node1")
			failedBack = time.Now()
		}
		// Background work made after the failovers, run (asserted at the
		// end) across the failover back.
		bg.create(bgFwdRun, bgHybridRun, bgTolRun)
	})
	mark("failover back to node1", func(*phase) {
		if failedBack.IsZero() {
			// The monitor may have moved the primary back by itself since
			// (a health check missed on a loaded machine): then there is
			// nothing to ask.
			if f.WaitSettled(90*time.Second) == node1 {
				t.Log("the monitor failed over to node1 by itself")
			} else {
				f.PerformFailover()
				f.WaitSettled(60 * time.Second)
			}
			failedBack = time.Now()
		}
	})
	close(stop)
	wg.Wait()
	t.Logf("formation after: %v", f.State())

	// Never a 500, nor a request without an answer; every 503 a
	// SERVICE_UNAVAILABLE with Retry-After.
	rec.mu.Lock()
	calls := append([]call(nil), rec.calls...)
	rec.mu.Unlock()
	sort.Slice(calls, func(i, j int) bool { return calls[i].sent.Before(calls[j].sent) })
	byStatus := map[string]int{}
	for _, x := range calls {
		byStatus[fmt.Sprintf("%s %s %d", x.proc, x.op, x.status)]++
		switch {
		case x.status == 0:
			t.Errorf("%s %s %s: no answer: %s", x.proc, x.op, x.key, x.code)
		case x.status >= 500 && x.status != http.StatusServiceUnavailable:
			t.Errorf("%s %s %s %s: %d %s", x.proc, x.op, x.key, x.turnID, x.status, x.code)
		case x.status == http.StatusServiceUnavailable && x.op != "readyz" && (x.code != "SERVICE_UNAVAILABLE" || x.retry != "2"):
			t.Errorf("%s %s: a 503 with code %q and Retry-After %q", x.proc, x.op, x.code, x.retry)
		}
	}
	t.Logf("answers by process, operation and status: %v", byStatus)

	probeMu.Lock()
	probed := append([]call(nil), probes...)
	probeMu.Unlock()
	checkOutages(t, f, phases, calls, probed)
	checkOneHost(t, calls, standbyFrom, standbyTo, failedBack)

	// Every acknowledged create kept, one turn per key; no turn called
	// twice; every completion kept.
	keyTurn := map[string]string{}
	called := map[string]int{}
	completed := map[string]bool{}
	for _, x := range calls {
		switch {
		case x.op == "create" && x.status == http.StatusCreated:
			if prev, ok := keyTurn[x.key]; ok && prev != x.turnID {
				t.Errorf("idempotency key %s made two turns: %s and %s", x.key, prev, x.turnID)
			}
			keyTurn[x.key] = x.turnID
		case x.op == "next" && x.write():
			called[x.turnID]++
		case x.op == "complete" && x.write():
			completed[x.turnID] = true
		}
	}
	for id, n := range called {
		if n > 1 {
			t.Errorf("turn %s called %d times", id, n)
		}
	}
	for k, id := range keyTurn {
		var v struct{ Status string }
		admin.API(http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, &v)
		if completed[id] && v.Status != "COMPLETED" {
			t.Errorf("turn %s (%s) acknowledged completed is %s", id, k, v.Status)
		}
	}
	t.Logf("%d creates acknowledged (%d keys), %d turns called, %d completed: all read back", len(rec.acked), len(keyTurn), len(called), len(completed))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := pgx.Connect(ctx, multi)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var dups int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM turns WHERE idempotency_key IS NOT NULL GROUP BY account_id, idempotency_key HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups > 0 {
		t.Errorf("%d idempotency keys with more than one turn", dups)
	}

	// Every event delivered; the lag of those acknowledged after each
	// fault's recovery.
	deadline := time.Now().Add(45 * time.Second)
	missing := func() (n int, sample string) {
		check := func(event, id string) {
			if rc.at(event, id).IsZero() {
				n++
				sample = event + " " + id
			}
		}
		for _, id := range keyTurn {
			check("turn.created", id)
		}
		for id := range called {
			check("turn.called", id)
		}
		for id := range completed {
			check("turn.completed", id)
		}
		return n, sample
	}
	for {
		n, sample := missing()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d events never delivered (%s, ...)", n, sample)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, p := range phases {
		var lags []time.Duration
		for _, x := range calls {
			if x.op == "create" && x.status == http.StatusCreated && x.sent.After(p.start) && x.sent.Before(p.end) {
				if at := rc.at("turn.created", x.turnID); !at.IsZero() {
					lags = append(lags, max(at.Sub(x.answered), 0))
				}
			}
		}
		sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
		if len(lags) > 0 {
			t.Logf("%s: webhook lag of the creates acknowledged in it: median %v, worst %v (%d)", p.name,
				lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond), len(lags))
		}
	}

	// The tolerance no-show, scheduled before the failover, fires after.
	due := calledAt.Add(time.Minute)
	for {
		var v struct{ Status string }
		admin.API(http.MethodGet, "/turns/"+tolTurn.ID, nil).Must(http.StatusOK, &v)
		if v.Status == "NO_SHOW" {
			t.Logf("tolerance no-show fired %.1f s after it was due", time.Since(due).Seconds())
			break
		}
		if time.Now().After(due.Add(45 * time.Second)) {
			t.Fatalf("the tolerance no-show due at %s never fired: %s", due.Format(time.TimeOnly), v.Status)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// The background work made after the failovers has run.
	bg.verify()
}

// probeWrite is the test's own write: an XID assigned and committed, which
// under pg_auto_failover's synchronous replication is acknowledged once the
// standby has it. Not a temporary table: a backend drops its temporary
// tables when it exits, in a transaction of its own that waits for the
// standby too, and a backend exiting while the standby is being promoted
// waited for good and hung the old primary's fast shutdown (the monitor
// then waited its primary_demote_timeout, 30 s, and the node had to be
// rebuilt).
const probeWrite = "SELECT pg_current_xact_id()"

// waitWritable waits until a new connection to url takes a write.
func waitWritable(t testing.TB, f *pgcluster.Formation, url string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			_, err = conn.Exec(ctx, probeWrite)
			conn.Close(context.Background())
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the formation took no write for %v: %v\n%s", within, err, f.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// qmsBinary builds cmd/qms: the processes run the binary users run.
func qmsBinary(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "qms")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/qms")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/qms: %v\n%s", err, out)
	}
	return path
}

// startQMS starts `qms serve` on dbURL and waits until it is ready.
func startQMS(t testing.TB, bin string, env []string, dbURL, logPath string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--no-migrate")
	cmd.Env = append(os.Environ(), append(env, "QMS_DATABASE_URL="+dbURL, "QMS_HTTP_ADDR="+addr)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
	})
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(logPath)
			t.Fatalf("qms on %s not ready: %v\n%s", dbURL, err, tail(string(data), 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
