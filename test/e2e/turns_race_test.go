package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// pgTurns is the turns service on a fresh Postgres database, with the real
// repositories, unit of work and event log: what the races run against.
type pgTurns struct {
	db      *postgres.DB
	svc     *turns.Service
	account string
	run     string
	queue   string
	// other is a second service on the database: another process.
	other *turns.Service
}

// noJobs refuses to schedule: the race queues have no tolerance, so a job
// would be a bug.
type noJobs struct{}

func (noJobs) Schedule(context.Context, platform.Job) error {
	return errors.New("no job expected")
}

func (noJobs) ScheduleMany(context.Context, []platform.Job) error {
	return errors.New("no job expected")
}

func newPGTurns(t testing.TB, settings queues.CreateInput, guards ...turns.IntakeGuard) *pgTurns {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	clock := platform.SystemClock{}
	bus := events.NewBus(postgres.NewEvents(db))
	acc := accounts.Account{ID: platform.NewID(platform.PrefixAccount), Name: "Race", Plan: accounts.PlanPremium,
		CreatedAt: clock.Now(), UpdatedAt: clock.Now()}
	if err := postgres.NewAccounts(db).CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	ents := entities.NewService(postgres.NewEntities(db), db, clock)
	e, err := ents.Create(ctx, acc.ID, entities.CreateInput{Name: platform.Ptr("Branch")})
	if err != nil {
		t.Fatal(err)
	}
	qrepo := postgres.NewQueues(db)
	settings.EntityID, settings.Name, settings.Type = &e.ID, platform.Ptr("Race"), platform.Ptr(queues.TypeTurn)
	q, err := queues.NewService(qrepo, ents, db, bus, clock).Create(ctx, acc.ID, settings)
	if err != nil {
		t.Fatal(err)
	}
	svc := turns.NewService(postgres.NewTurns(db), qrepo, db, bus, noJobs{}, clock, turns.Hooks{Guards: guards})
	other := turns.NewService(postgres.NewTurns(db), qrepo, db, bus, noJobs{}, clock, turns.Hooks{Guards: guards})
	return &pgTurns{db: db, svc: svc, other: other, account: acc.ID, run: q.Runs[0].ID, queue: q.ID}
}

// TestRaceDispatchersDrainALine: 16 dispatchers call next on one run of
// 1,000 waiting turns until it is empty; every turn is called exactly once.
func TestRaceDispatchersDrainALine(t *testing.T) {
	const dispatchers, total = 16, 1000
	p := newPGTurns(t, queues.CreateInput{})
	ctx := context.Background()
	for range total {
		if _, _, err := p.svc.Create(ctx, p.account, p.run, turns.CreateInput{}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu     sync.Mutex
		called = map[string]int{}
		wg     sync.WaitGroup
		failed atomic.Value
	)
	for range dispatchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				v, err := p.svc.Next(ctx, p.account, p.run, turns.CallInput{})
				if platform.IsCode(err, turns.CodeNoWaitingTurns) {
					return
				}
				if err != nil {
					failed.Store(err)
					return
				}
				mu.Lock()
				called[v.ID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("a dispatcher failed: %v", err)
	}
	if len(called) != total {
		t.Fatalf("want %d turns called, got %d", total, len(called))
	}
	for id, n := range called {
		if n != 1 {
			t.Fatalf("turn %s called %d times", id, n)
		}
	}
	var waiting, calledRows, events int
	pool := p.db.Pool
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'WAITING'), count(*) FILTER (WHERE status = 'CALLED') FROM turns WHERE run_id = $1`, p.run).Scan(&waiting, &calledRows); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE run_id = $1 AND name = 'turn.called'`, p.run).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if waiting != 0 || calledRows != total || events != total {
		t.Fatalf("stored: %d waiting, %d called, %d turn.called events", waiting, calledRows, events)
	}
}

// failEvery refuses one intake in every n, after the turn took its number
// and was inserted: its transaction rolls back with the number.
type failEvery struct {
	turns.GuardBase
	n     int64
	count atomic.Int64
	fails atomic.Int64
}

func (g *failEvery) Check(context.Context, turns.Intake) error { return nil }

func (g *failEvery) Admitted(_ context.Context, _ turns.Intake, t turns.Turn) error {
	if g.count.Add(1)%g.n == 0 {
		g.fails.Add(1)
		return fmt.Errorf("refused %s after it took number %d", t.ID, t.Number)
	}
	return nil
}

// TestRaceIntakeNumbersHaveNoGap: 200 concurrent intakes on one run, some
// failing after their number is taken; the committed numbers are 1..N.
func TestRaceIntakeNumbersHaveNoGap(t *testing.T) {
	const intakes = 200
	g := &failEvery{n: 7}
	p := newPGTurns(t, queues.CreateInput{TurnPrefix: platform.Ptr("A"), TurnPadding: platform.Ptr(3)}, g)
	ctx := context.Background()
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for range intakes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := p.svc.Create(ctx, p.account, p.run, turns.CreateInput{}); err != nil {
				refused.Add(1)
				return
			}
			ok.Add(1)
		}()
	}
	wg.Wait()
	if refused.Load() != g.fails.Load() || refused.Load() == 0 {
		t.Fatalf("%d refused, the guard failed %d", refused.Load(), g.fails.Load())
	}
	rows, err := p.db.Pool.Query(ctx, `SELECT number, display_code FROM turns WHERE run_id = $1`, p.run)
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int
	for rows.Next() {
		var n int
		var code string
		if err := rows.Scan(&n, &code); err != nil {
			t.Fatal(err)
		}
		if code != fmt.Sprintf("A%03d", n) {
			t.Fatalf("display code %s for number %d", code, n)
		}
		numbers = append(numbers, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Ints(numbers)
	if int64(len(numbers)) != ok.Load() {
		t.Fatalf("%d committed turns, %d successful intakes", len(numbers), ok.Load())
	}
	for i, n := range numbers {
		if n != i+1 {
			t.Fatalf("committed numbers are not 1..%d: position %d holds %d (%v)", len(numbers), i, n, numbers)
		}
	}
}

// TestRaceOneIdempotencyKey: 50 concurrent creates with one key make one
// turn, and every caller gets it.
func TestRaceOneIdempotencyKey(t *testing.T) {
	const callers = 50
	p := newPGTurns(t, queues.CreateInput{})
	ctx := context.Background()
	var wg sync.WaitGroup
	ids := make([]string, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := p.svc.Create(ctx, p.account, p.run, turns.CreateInput{IdempotencyKey: platform.Ptr("same-key-0001")})
			ids[i], errs[i] = v.ID, err
		}()
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("caller %d got %s, caller 0 got %s", i, ids[i], ids[0])
		}
	}
	var n, created int
	if err := p.db.Pool.QueryRow(ctx, `SELECT count(*), max(number) FROM turns WHERE run_id = $1`, p.run).Scan(&n, &created); err != nil {
		t.Fatal(err)
	}
	if n != 1 || created != 1 {
		t.Fatalf("want one turn numbered 1, got %d turns, highest number %d", n, created)
	}
}

// TestRaceOneIdempotencyKeyOverHTTP is the same race through the API of a
// real process on Postgres.
func TestRaceOneIdempotencyKeyOverHTTP(t *testing.T) {
	w := turnStart(t, apptest.Postgres)
	run := w.queue(nil).Runs[0].ID
	const callers = 50
	var wg sync.WaitGroup
	ids := make([]string, callers)
	statuses := make([]int, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := w.app.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{"idempotencyKey": "http-key-0001"})
			var v client.Turn
			if r.Status == http.StatusCreated {
				r.Decode(&v)
			}
			ids[i], statuses[i] = v.ID, r.Status
		}()
	}
	wg.Wait()
	for i := range callers {
		if statuses[i] != http.StatusCreated || ids[i] != ids[0] {
			t.Fatalf("caller %d: %d %s (caller 0: %s)", i, statuses[i], ids[i], ids[0])
		}
	}
	var page struct{ Data []client.Turn }
	w.app.API(http.MethodGet, "/queue-runs/"+run+"/turns", nil).Must(http.StatusOK, &page)
	if len(page.Data) != 1 {
		t.Fatalf("want one turn, got %d", len(page.Data))
	}
}

// TestToleranceSurvivesARestart: the tolerance job of a call lives in
// Postgres; a second process on the database runs it once it is due.
func TestToleranceSurvivesARestart(t *testing.T) {
	url := pgtest.URL(t)
	first := apptest.PostgresAt(t, url)
	w := &turnWorld{t: t, app: first}
	var e client.Entity
	first.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
	w.entity = e.ID
	q := w.queue(map[string]any{"tolerance": map[string]any{"graceMinutes": 30}})
	v := w.take(q.Runs[0].ID, nil)
	first.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/dispatch/next", nil).Must(http.StatusCreated, nil)
	first.Stop()

	// Half an hour passes while no process runs: the job falls due.
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tag, err := db.Pool.Exec(context.Background(),
		`UPDATE river_job SET scheduled_at = now() WHERE kind = $1 AND args->'payload'->>'turnId' = $2`, turns.ToleranceJobKind, v.ID)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("the job is not in river_job: %v (%d rows)", err, tag.RowsAffected())
	}

	second := apptest.PostgresAt(t, url)
	w2 := &turnWorld{t: t, app: second}
	// The second process has its own account; read the turn as the first's
	// with the first's key, which lives in the database.
	second.Key, second.AccountID = first.Key, first.AccountID
	w2.waitStatus(v.ID, "NO_SHOW", 30*time.Second)
}
