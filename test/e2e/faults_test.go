package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgcluster"
)

// faultCall is one request of the load and how it ended.
type faultCall struct {
	key     string // the idempotency key of a create
	turnID  string // on 201
	status  int
	code    string
	retry   string // Retry-After
	sent    time.Time
	answers time.Time
}

// TestDatabaseOutageUnderLoad stops the PostgreSQL cluster of its own under
// a qms process taking about 50 creates a second, for six seconds, and
// starts it again. While it is away every answer is 503
// SERVICE_UNAVAILABLE with Retry-After (never a 500, the API-key lookup
// included: the auth cache lives 2 s); once it is back, writes succeed
// within seconds and every one after that succeeds (the pool was not
// drained), the event stream delivers each new turn within two seconds and
// never cuts its subscriber off, every acknowledged create is kept, and
// nothing commits after the load has ended (the request deadline).
func TestDatabaseOutageUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("stops and starts a database for about 20 s")
	}
	cluster := pgcluster.Start(t)
	const deadline = 3 * time.Second
	a := apptest.PostgresAt(t, cluster.URL(), apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 1_000_000
		c.HTTP.RequestTimeout = deadline
		c.Database.AcquireTimeout = time.Second
	}))
	_, _, run := setupQueue(t, a, nil)

	// The subscriber: every turn.created with when it arrived.
	sse := openSSE(t, streamURL(a, "runId="+run), keyHeader(a.Key))
	var smu sync.Mutex
	seen := map[string]time.Time{}
	var streamEnd string
	go func() {
		for f := range sse.frames {
			if f.Comment {
				continue
			}
			if f.Event != "turn.created" {
				smu.Lock()
				if f.Event == "overflow" || f.Event == "shutdown" {
					streamEnd = f.Event + " " + f.Data
				}
				smu.Unlock()
				continue
			}
			var m streamMessage
			if err := json.Unmarshal([]byte(f.Data), &m); err == nil {
				smu.Lock()
				seen[fmt.Sprint(m.Data["turnId"])] = time.Now()
				smu.Unlock()
			}
		}
	}()

	var mu sync.Mutex
	var calls []faultCall
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(160 * time.Millisecond) // 8 workers: ~50 a second
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				c := faultCall{key: fmt.Sprintf("outage-%d-%06d", w, i), sent: time.Now()}
				r := takeTurn(a, run, map[string]any{"idempotencyKey": c.key})
				c.answers, c.status, c.retry = time.Now(), r.Status, r.Header.Get("Retry-After")
				var body struct {
					ID    string
					Error struct{ Code string }
				}
				_ = json.Unmarshal(r.Body, &body)
				c.turnID, c.code = body.ID, body.Error.Code
				mu.Lock()
				calls = append(calls, c)
				mu.Unlock()
			}
		}()
	}

	// An SDK client creating turns through it all: it retries each create
	// (its idempotency key set by the SDK) across the outage, so none fails
	// and none is made twice.
	sdk := client.New(a.BaseURL, a.Key, client.WithRetry(client.Retry{MaxAttempts: 12, MaxDelay: 2 * time.Second}))
	var sdkTurns []string
	var sdkErrs []error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			turn, err := sdk.CreateTurn(context.Background(), run, client.TurnCreate{})
			mu.Lock()
			if err != nil {
				sdkErrs = append(sdkErrs, err)
			} else {
				sdkTurns = append(sdkTurns, turn.ID)
			}
			mu.Unlock()
		}
	}()

	time.Sleep(2 * time.Second)
	stopped := time.Now()
	// Immediate: the server dies as in a crash (no goodbye to its clients)
	// and recovers from its WAL when it starts; "fast" passes as well.
	cluster.Stop("immediate")
	time.Sleep(6 * time.Second)
	cluster.Start()
	restarted := time.Now()
	time.Sleep(8 * time.Second)
	close(stop)
	wg.Wait()
	ended := time.Now()

	statuses := map[int]int{}
	var firstOK time.Time
	for _, c := range calls {
		statuses[c.status]++
		switch c.status {
		case http.StatusCreated:
			if c.sent.After(restarted) && (firstOK.IsZero() || c.answers.Before(firstOK)) {
				firstOK = c.answers
			}
		case http.StatusServiceUnavailable:
			if c.code != "SERVICE_UNAVAILABLE" || c.retry != "2" {
				t.Errorf("a 503 with code %q and Retry-After %q", c.code, c.retry)
			}
		default:
			t.Errorf("%s: answered %d %s", c.key, c.status, c.code)
		}
	}
	t.Logf("%d requests: %v; database away %v", len(calls), statuses, restarted.Sub(stopped).Round(time.Millisecond))
	t.Logf("SDK: %d turns created, %d errors", len(sdkTurns), len(sdkErrs))
	for _, err := range sdkErrs {
		t.Errorf("the SDK gave up on a create: %v", err)
	}
	if statuses[http.StatusServiceUnavailable] == 0 {
		t.Fatal("no request met the outage")
	}
	if firstOK.IsZero() {
		t.Fatal("no create succeeded after the database came back")
	}
	recovered := firstOK.Sub(restarted)
	t.Logf("first create acknowledged %v after the database was back", recovered.Round(time.Millisecond))
	if recovered > 5*time.Second {
		t.Errorf("writes came back %v after the database", recovered)
	}
	// The pool was not drained: a second after the first success, every
	// create succeeds.
	for _, c := range calls {
		if c.sent.After(firstOK.Add(time.Second)) && c.status != http.StatusCreated {
			t.Errorf("%s sent %v after recovery: %d %s", c.key, c.sent.Sub(firstOK).Round(time.Millisecond), c.status, c.code)
		}
	}

	// Every acknowledged create is kept, and seen on the stream; those made
	// after the return arrive within two seconds of their answer.
	var lags []time.Duration
	waitUntil := time.Now().Add(10 * time.Second)
	for _, c := range calls {
		if c.status != http.StatusCreated {
			continue
		}
		a.API(http.MethodGet, "/turns/"+c.turnID, nil).Must(http.StatusOK, nil)
		var at time.Time
		for {
			smu.Lock()
			at = seen[c.turnID]
			smu.Unlock()
			if !at.IsZero() || time.Now().After(waitUntil) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if at.IsZero() {
			t.Errorf("acknowledged turn %s never reached the stream", c.turnID)
			continue
		}
		if c.sent.After(restarted) {
			lags = append(lags, max(at.Sub(c.answers), 0))
		}
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	if len(lags) > 0 {
		worst := lags[len(lags)-1]
		t.Logf("stream after the return: %d turns, median lag %v, worst %v", len(lags), lags[len(lags)/2].Round(time.Millisecond), worst.Round(time.Millisecond))
		if worst > 2*time.Second {
			t.Errorf("a turn reached the stream %v after its create was answered", worst)
		}
	}
	smu.Lock()
	if streamEnd != "" {
		t.Errorf("the stream ended: %s", streamEnd)
	}
	smu.Unlock()

	// Nothing commits after its request's deadline: the count of turns does
	// not move once the load has been over for longer than the deadline.
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	count := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM turns WHERE run_id = $1`, run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	time.Sleep(time.Until(ended.Add(deadline + time.Second)))
	n1 := count()
	time.Sleep(3 * time.Second)
	if n2 := count(); n2 != n1 {
		t.Errorf("%d turns committed more than %v after the load ended", n2-n1, deadline)
	}
	acked := statuses[http.StatusCreated] + len(sdkTurns)
	t.Logf("%d turns in the database, %d acknowledged", n1, acked)
	if n1 < acked {
		t.Errorf("%d turns kept, fewer than the %d acknowledged", n1, acked)
	}
	for _, id := range sdkTurns {
		a.API(http.MethodGet, "/turns/"+id, nil).Must(http.StatusOK, nil)
	}
}

// TestAbandonedRequestsDoNotCommitLater holds a lock on the turns table so
// that creates hang, lets their clients give up, and releases the lock
// after the server's request deadline: the creates the clients abandoned
// stopped at the deadline and never commit, and a client that waited got
// 503 SERVICE_UNAVAILABLE at about the deadline.
func TestAbandonedRequestsDoNotCommitLater(t *testing.T) {
	const deadline = time.Second
	a := apptest.Postgres(t, apptest.WithConfig(func(c *config.Config) { c.HTTP.RequestTimeout = deadline }))
	_, _, run := setupQueue(t, a, nil)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, a.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	count := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM turns WHERE run_id = $1`, run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `LOCK TABLE turns IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"idempotencyKey":"abandoned-%04d"}`, i)
			req, _ := http.NewRequest(http.MethodPost, a.BaseURL+"/api/v1/queue-runs/"+run+"/turns", strings.NewReader(body))
			req.Header.Set("X-API-Key", a.Key)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := impatient.Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("create %d answered %d before its client gave up", i, resp.StatusCode)
			}
		}()
	}
	start := time.Now()
	r := takeTurn(a, run, map[string]any{"idempotencyKey": "patient-0001"})
	waited := time.Since(start)
	wantError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	if waited < deadline-100*time.Millisecond || waited > deadline+2*time.Second {
		t.Errorf("the waiting client got its 503 after %v, want about the %v deadline", waited, deadline)
	}
	wg.Wait()
	time.Sleep(time.Second) // past every abandoned create's deadline
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if n := count(); n != 0 {
		t.Fatalf("%d abandoned creates committed after the lock was released", n)
	}
	// The run works as before.
	takeTurn(a, run, map[string]any{}).Must(http.StatusCreated, nil)
}
