package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// refuseThree refuses, after the run's lock and the number's draw, every
// intake for three people: a failure that rolls back what the draw made.
type refuseThree struct{ turns.GuardBase }

var errThree = errors.New("three people refused")

func (refuseThree) Check(_ context.Context, in turns.Intake) error {
	if platform.Deref(in.Input.PeopleCount, 1) == 3 {
		return platform.Conflict("THREE_REFUSED", errThree.Error(), nil)
	}
	return nil
}

// TestRaceChainedIntakesKeepTheLineWhole: concurrent intakes of one run
// share transactions (group commit), a fifth of them refused after their
// draw (their savepoint's ROLLBACK TO gives the number and the line
// version back), the run capped so that the later ones are WAITLISTED
// (an empty change under their version). The run's recorded line changes
// are then every version from 1 to the run's line version, once each, and
// replayed they make the stored WAITING line; both processes' views of the
// waiting turns give the stored positions.
func TestRaceChainedIntakesKeepTheLineWhole(t *testing.T) {
	p := newPGTurns(t, queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(60),
		WaitlistEnabled: platform.Ptr(true)}}, refuseThree{})
	checkChainedLine(t, p, []*turns.Service{p.svc}, []*postgres.DB{p.db}, nil)
}

// TestRaceTwoProcessesKeepTheLineWhole is TestRaceChainedIntakesKeepTheLineWhole
// with the intakes shared by two processes on the database (each its own
// pool, run gates and cached lines): each patches its line through the
// other's changes (LineAfter, LineChanges).
func TestRaceTwoProcessesKeepTheLineWhole(t *testing.T) {
	p := newPGTurns(t, queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(60),
		WaitlistEnabled: platform.Ptr(true)}}, refuseThree{})
	svc2, db2 := secondProcess(t, p)
	checkChainedLine(t, p, []*turns.Service{p.svc, svc2}, []*postgres.DB{p.db, db2}, nil)
}

// secondProcess is another process's turns service on p's database: its
// own pool, run gates and cached lines, and the same guard.
func secondProcess(t *testing.T, p *pgTurns) (*turns.Service, *postgres.DB) {
	t.Helper()
	db2, err := postgres.Open(context.Background(), p.db.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db2.Close)
	svc2 := turns.NewService(postgres.NewTurns(db2), postgres.NewQueues(db2), db2, events.NewBus(postgres.NewEvents(db2)),
		noJobs{}, platform.SystemClock{}, turns.Hooks{Guards: []turns.IntakeGuard{refuseThree{}}})
	return svc2, db2
}

// TestRaceRedrawsKeepTheLineWhole: the queue's prefix changes behind both
// processes' backs once their queue is cached, so their first intakes
// after it draw ahead with stale settings and draw again (errRedraw), in
// chains: the line changes stay whole.
func TestRaceRedrawsKeepTheLineWhole(t *testing.T) {
	p := newPGTurns(t, queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(60),
		WaitlistEnabled: platform.Ptr(true)}}, refuseThree{})
	svc2, db2 := secondProcess(t, p)
	checkChainedLine(t, p, []*turns.Service{p.svc, svc2}, []*postgres.DB{p.db, db2}, func() {
		if _, err := p.db.Pool.Exec(context.Background(), `UPDATE queues SET doc = jsonb_set(doc, '{turnPrefix}', '"Z"') WHERE id = $1`, p.queue); err != nil {
			t.Fatal(err)
		}
	})
}

func checkChainedLine(t *testing.T, p *pgTurns, svcs []*turns.Service, dbs []*postgres.DB, between func()) {
	const intakes, maxTurns = 150, 60
	ctx := context.Background()
	// The first intakes cache the queue: the rest draw ahead.
	for _, svc := range svcs {
		for range 2 {
			if _, _, err := svc.Create(ctx, p.account, p.run, turns.CreateInput{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if between != nil {
		between()
	}
	var before []postgres.IntakeChainStats
	for _, db := range dbs {
		before = append(before, db.IntakeChainStats())
	}
	var wg sync.WaitGroup
	errs := make([]error, intakes)
	answers := make([]turns.View, intakes)
	for i := range intakes {
		in := turns.CreateInput{}
		if i%5 == 2 {
			in.PeopleCount = platform.Ptr(3)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], _, errs[i] = svcs[i%len(svcs)].Create(ctx, p.account, p.run, in)
		}()
	}
	wg.Wait()
	for i, db := range dbs {
		if st := db.IntakeChainStats(); st.Joined == before[i].Joined || st.FailedAlone == before[i].FailedAlone {
			t.Fatalf("chains: %+v (before %+v); want members joined and some failing alone", st, before[i])
		}
	}
	for i, err := range errs {
		if refused := i%5 == 2; refused != platform.IsCode(err, "THREE_REFUSED") || (!refused && err != nil) {
			t.Fatalf("intake %d: %v", i, err)
		}
	}

	var version int64
	if err := p.db.Pool.QueryRow(ctx, `SELECT line_version FROM turn_counters WHERE run_id = $1`, p.run).Scan(&version); err != nil {
		t.Fatal(err)
	}
	changes, err := p.db.Pool.Query(ctx, `SELECT version, cardinality(removed), added FROM turn_line_changes
		WHERE run_id = $1 ORDER BY version`, p.run)
	if err != nil {
		t.Fatal(err)
	}
	var (
		want  = int64(1)
		added []int64
	)
	for changes.Next() {
		var (
			v, removed int64
			a          []int64
		)
		if err := changes.Scan(&v, &removed, &a); err != nil {
			t.Fatal(err)
		}
		if v != want || removed != 0 {
			t.Fatalf("line change %d (removing %d keys) where version %d was due", v, removed, want)
		}
		added = append(added, a...)
		want++
	}
	if err := changes.Err(); err != nil {
		t.Fatal(err)
	}
	// Every intake that drew ahead made a version, a WAITLISTED one too;
	// one drawn after the lock (a redraw) makes one only when its turn
	// joins the line.
	created := int64(2*len(svcs) + intakes - intakes/5)
	if want-1 != version || version > created || (between == nil && version != created) {
		t.Fatalf("%d line changes, line version %d; want one per created turn (%d)", want-1, version, created)
	}
	var waiting int
	if err := p.db.Pool.QueryRow(ctx, `SELECT count(*) FROM turns WHERE run_id = $1 AND status = 'WAITING'`, p.run).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if len(added) != waiting || waiting != maxTurns {
		t.Fatalf("the changes add %d keys, %d turns wait; want %d", len(added), waiting, maxTurns)
	}

	// Both processes' views give every waiting turn its place.
	rows, err := p.db.Pool.Query(ctx, `SELECT id FROM turns WHERE run_id = $1 AND status = 'WAITING'
		ORDER BY priority_rank, seq`, p.run)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// No turn leaves the line and each joins at its back, in the run's
	// lock order: the position an intake answered is its place now.
	for i, v := range answers {
		if errs[i] != nil || v.Status != turns.Waiting {
			continue
		}
		if at := slices.Index(ids, v.ID); v.Position == nil || *v.Position != at+1 {
			t.Fatalf("intake %d answered position %v for turn %s, which waits at %d", i, v.Position, v.ID, at+1)
		}
	}
	for _, svc := range append(svcs, p.other) {
		for i, id := range ids {
			v, err := svc.Get(ctx, p.account, id)
			if err != nil {
				t.Fatal(err)
			}
			if v.Position == nil || *v.Position != i+1 {
				t.Fatalf("turn %s: position %v, want %d", id, v.Position, i+1)
			}
		}
	}
}

// TestRaceIntakesAndDispatchKeepTheLineWhole: two processes take turns in
// one capped run with a waitlist while dispatchers of both call and
// complete its head, so intakes promote the waitlist (their changes add
// the promoted turns), some WAITLISTED, a fifth refused after the draw.
// Replayed from an empty line, the recorded changes, one per version from
// 1 on, make the stored WAITING line, and both processes' views agree
// with it.
func TestRaceIntakesAndDispatchKeepTheLineWhole(t *testing.T) {
	const intakes, dispatches = 200, 80
	p := newPGTurns(t, queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(20),
		WaitlistEnabled: platform.Ptr(true)}}, refuseThree{})
	ctx := context.Background()
	svc2, _ := secondProcess(t, p)
	svcs := []*turns.Service{p.svc, svc2}
	for _, svc := range svcs {
		for range 2 {
			if _, _, err := svc.Create(ctx, p.account, p.run, turns.CreateInput{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, intakes+dispatches)
	for i := range intakes {
		in := turns.CreateInput{}
		switch {
		case i%5 == 2:
			in.PeopleCount = platform.Ptr(3)
		case i%10 == 0, i%10 == 5:
			// A key sent four times, with two bodies: replays (nothing
			// drawn) and IDEMPOTENCY_KEY_REUSED, from both processes.
			in.IdempotencyKey = platform.Ptr(fmt.Sprintf("line-key-%d", i/20))
			in.PeopleCount = platform.Ptr(1 + i/10%2)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := svcs[i%2].Create(ctx, p.account, p.run, in); err != nil && !platform.IsCode(err, "THREE_REFUSED") &&
				!platform.IsCode(err, turns.CodeIdempotencyKeyReused) {
				errs[i] = err
			}
		}()
	}
	for i := range dispatches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := svcs[i%2]
			v, err := svc.Next(ctx, p.account, p.run, turns.CallInput{})
			if err != nil {
				if !platform.IsCode(err, turns.CodeNoWaitingTurns) {
					errs[intakes+i] = err
				}
				return
			}
			if _, err := svc.Start(ctx, p.account, v.ID); err != nil {
				errs[intakes+i] = err
				return
			}
			if _, err := svc.Complete(ctx, p.account, v.ID); err != nil {
				errs[intakes+i] = err
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}

	var version int64
	if err := p.db.Pool.QueryRow(ctx, `SELECT line_version FROM turn_counters WHERE run_id = $1`, p.run).Scan(&version); err != nil {
		t.Fatal(err)
	}
	rows, err := p.db.Pool.Query(ctx, `SELECT version, removed, added, reset FROM turn_line_changes
		WHERE run_id = $1 ORDER BY version`, p.run)
	if err != nil {
		t.Fatal(err)
	}
	line := map[int64]bool{}
	want := int64(1)
	for rows.Next() {
		var (
			v              int64
			removed, added []int64
			reset          bool
		)
		if err := rows.Scan(&v, &removed, &added, &reset); err != nil {
			t.Fatal(err)
		}
		if v != want || reset {
			t.Fatalf("line change %d (reset %v) where version %d was due", v, reset, want)
		}
		for _, k := range removed {
			if !line[k] {
				t.Fatalf("version %d removes key %d, not in the line", v, k)
			}
			delete(line, k)
		}
		for _, k := range added {
			if line[k] {
				t.Fatalf("version %d adds key %d, already in the line", v, k)
			}
			line[k] = true
		}
		want++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want-1 != version {
		t.Fatalf("%d line changes, line version %d", want-1, version)
	}
	var stored []int64
	if err := p.db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg((priority_rank::bigint << 56) | (seq + (1::bigint << 55))
		ORDER BY priority_rank, seq), '{}') FROM turns WHERE run_id = $1 AND status = 'WAITING'`, p.run).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(line) {
		t.Fatalf("the changes make a line of %d, %d turns wait", len(line), len(stored))
	}
	for _, k := range stored {
		if !line[k] {
			t.Fatalf("waiting key %d is not in the line the changes make", k)
		}
	}
	ids := waitingIDs(t, p)
	for _, svc := range append(svcs, p.other) {
		for i, id := range ids {
			v, err := svc.Get(ctx, p.account, id)
			if err != nil {
				t.Fatal(err)
			}
			if v.Position == nil || *v.Position != i+1 {
				t.Fatalf("turn %s: position %v, want %d", id, v.Position, i+1)
			}
		}
	}
}

func waitingIDs(t *testing.T, p *pgTurns) []string {
	t.Helper()
	rows, err := p.db.Pool.Query(context.Background(), `SELECT id FROM turns WHERE run_id = $1 AND status = 'WAITING'
		ORDER BY priority_rank, seq`, p.run)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}
