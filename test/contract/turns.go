package contract

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// turnsWorld is a seeded account with one run and a station.
type turnsWorld struct {
	set     adapterset.Set
	owned   Owned
	runID   string
	station string
	now     time.Time
	seq     int64
}

func newTurnsWorld(t *testing.T, set adapterset.Set) *turnsWorld {
	t.Helper()
	ctx := context.Background()
	w := &turnsWorld{set: set, owned: OwnersOf(set).Seed(t), now: time.Now().UTC().Truncate(time.Microsecond)}
	run := queues.Run{ID: platform.NewID(platform.PrefixRun), AccountID: w.owned.AccountID, QueueID: w.owned.QueueID,
		Status: queues.RunOpen, IntakeOpen: true, CreatedAt: w.now, UpdatedAt: w.now}
	st := queues.Station{ID: platform.NewID(platform.PrefixStation), AccountID: w.owned.AccountID, QueueID: w.owned.QueueID,
		Label: "Desk", CreatedAt: w.now}
	if err := set.Queues.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := set.Queues.CreateStation(ctx, st); err != nil {
		t.Fatal(err)
	}
	w.runID, w.station = run.ID, st.ID
	return w
}

// turn builds (and stores, when store) a waiting turn of the run.
func (w *turnsWorld) turn(t *testing.T, mod func(*turns.Turn)) turns.Turn {
	t.Helper()
	w.seq++
	tu := turns.Turn{ID: platform.NewID(platform.PrefixTurn), AccountID: w.owned.AccountID, QueueID: w.owned.QueueID,
		RunID: w.runID, Number: int(w.seq), DisplayCode: "A" + string(rune('0'+w.seq%10)), Status: turns.Waiting,
		Priority: queues.PriorityNormal, Seq: w.seq, PeopleCount: 1, FormResponse: map[string]string{},
		RequestHash: "h", CreatedAt: w.now, UpdatedAt: w.now}
	if mod != nil {
		mod(&tu)
	}
	if err := w.set.Turns.Create(context.Background(), tu); err != nil {
		t.Fatal(err)
	}
	return tu
}

// RunTurns checks the turns.Repository contract. concurrent: the backend
// runs transactions side by side (PostgreSQL), so the suite also checks
// that a take skips the turns other transactions hold.
func RunTurns(t *testing.T, newSet NewSet, concurrent bool) {
	runTurns1(t, newSet)
	runTurns2(t, newSet, concurrent)
	runTurns3(t, newSet)
	runTurns4(t, newSet)
	runTurnMarks(t, newSet)
}

// runTurns1 is part 1 of RunTurns: create and get keep every field; an
// idempotency key is taken once per account; a station holds one called or
// in-service turn; numbers count per run and period and roll back; a turn
// put back at the head of the line (negative seq) sorts and records first.
func runTurns1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("create and get keep every field", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		at := w.now.Add(time.Minute)
		secs := 42.5
		want := w.turn(t, func(tu *turns.Turn) {
			tu.Status, tu.Priority, tu.PeopleCount = turns.Completed, queues.PriorityHigh, 3
			tu.Phone, tu.NotifyWhatsapp = platform.Ptr("+34600111222"), true
			tu.FormResponse = map[string]string{"reason": "Pickup", "name": "Ana"}
			tu.StationID, tu.CallCount, tu.Reentries = &w.station, 2, 1
			tu.HeldFrom, tu.ReopenTo, tu.ServiceSeconds = turns.HeldAfterCall, turns.InService, &secs
			tu.IdempotencyKey, tu.RequestHash = platform.Ptr("key-12345"), "abc"
			tu.ArrivedAt, tu.CalledAt, tu.StartedAt, tu.FinishedAt = &at, &at, &at, &at
			tu.AppointmentID = platform.Ptr("apt_1")
		})
		got, err := w.set.Turns.Get(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !sameTurn(got, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
		if _, err := w.set.Turns.Get(ctx, "turn_missing"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing: %v", err)
		}
		byKey, err := w.set.Turns.ByIdempotencyKey(ctx, w.owned.AccountID, "key-12345")
		if err != nil || byKey.ID != want.ID {
			t.Fatalf("by key: %v %v", byKey.ID, err)
		}
		if _, err := w.set.Turns.ByIdempotencyKey(ctx, "acc_other", "key-12345"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("key of another account: %v", err)
		}
	})

	t.Run("an idempotency key is taken once per account", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		w.turn(t, func(tu *turns.Turn) { tu.IdempotencyKey = platform.Ptr("key-12345") })
		w.seq++
		dup := turns.Turn{ID: platform.NewID(platform.PrefixTurn), AccountID: w.owned.AccountID, QueueID: w.owned.QueueID,
			RunID: w.runID, Status: turns.Waiting, Priority: queues.PriorityNormal, Seq: w.seq, PeopleCount: 1,
			IdempotencyKey: platform.Ptr("key-12345"), CreatedAt: w.now, UpdatedAt: w.now}
		err := w.set.UoW.Do(ctx, func(ctx context.Context) error { return w.set.Turns.Create(ctx, dup) })
		if !errors.Is(err, turns.ErrDuplicateKey) {
			t.Fatalf("want ErrDuplicateKey, got %v", err)
		}
	})

	t.Run("a station holds one called or in-service turn", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		a := w.turn(t, func(tu *turns.Turn) { tu.Status, tu.StationID = turns.Called, &w.station })
		b := w.turn(t, func(tu *turns.Turn) { tu.StationID = &w.station }) // waiting: fine
		at, busy, err := w.set.Turns.AtStation(ctx, w.station)
		if err != nil || !busy || at.ID != a.ID {
			t.Fatalf("at station: %v %v %v", at.ID, busy, err)
		}
		b.Status = turns.InService
		err = w.set.UoW.Do(ctx, func(ctx context.Context) error { return w.set.Turns.Update(ctx, b) })
		if !platform.IsCode(err, turns.CodeStationBusy) {
			t.Fatalf("want STATION_BUSY, got %v", err)
		}
		a.Status = turns.Completed
		if err := w.set.Turns.Update(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := w.set.Turns.Update(ctx, b); err != nil {
			t.Fatalf("station freed: %v", err)
		}
	})

	t.Run("numbers count per run and period and roll back", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		next := func(period string) int {
			n, err := w.set.Turns.NextNumber(ctx, w.runID, period)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		// A switch between the run-long period and a day carries the count
		// on; a day after a day restarts it.
		for i, step := range []struct {
			period string
			want   int
		}{{"", 1}, {"", 2}, {"2026-03-02", 3}, {"2026-03-02", 4}, {"2026-03-03", 1}, {"2026-03-03", 2}, {"", 3}, {"2026-03-04", 4}} {
			if got := next(step.period); got != step.want {
				t.Fatalf("step %d (%q): want %d, got %d", i, step.period, step.want, got)
			}
		}
		boom := errors.New("boom")
		err := w.set.UoW.Do(ctx, func(ctx context.Context) error {
			if _, err := w.set.Turns.NextNumber(ctx, w.runID, "2026-03-04"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if n := next("2026-03-04"); n != 5 {
			t.Fatalf("a rolled-back number comes back: want 5, got %d", n)
		}
		a, _ := w.set.Turns.NextSeq(ctx)
		b, _ := w.set.Turns.NextSeq(ctx)
		if b <= a {
			t.Fatalf("seq must increase: %d then %d", a, b)
		}
	})

	t.Run("a turn put back at the head of the line (negative seq) sorts and records first", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		w.turn(t, nil)
		head := w.turn(t, func(tu *turns.Turn) { tu.Seq = -1000 })
		_, line, err := w.set.Turns.WaitingLine(ctx, w.runID)
		if err != nil || len(line) != 2 || line[0] != head.Key() {
			t.Fatalf("line: %v %v, want %v first", line, err, head.Key())
		}
		var v int64
		err = w.set.UoW.Do(ctx, func(ctx context.Context) error {
			v, err = w.set.Turns.BumpLine(ctx, w.runID, turns.LineChange{Added: []turns.LineKey{head.Key()}, Removed: []turns.LineKey{{Rank: 3, Seq: 7}}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		changes, err := w.set.Turns.LineChanges(ctx, w.runID, v-1, v)
		if err != nil || len(changes) != 1 || changes[0].Added[0] != head.Key() || changes[0].Removed[0] != (turns.LineKey{Rank: 3, Seq: 7}) {
			t.Fatalf("recorded change: %+v %v", changes, err)
		}
		if next, ok, err := w.set.Turns.TakeNext(ctx, w.runID); err != nil || !ok || next.ID != head.ID {
			t.Fatalf("next takes the head: %s %v %v", next.ID, ok, err)
		}
	})
}

// runTurns2 is part 2 of RunTurns: DrawNumber spells the code as displayCode
// and finds it in use; a code is in use while its turn is, or may come back,
// in the line; take follows the line and counts the active.
func runTurns2(t *testing.T, newSet NewSet, concurrent bool) {
	ctx := context.Background()
	t.Run("DrawNumber spells the code as displayCode and finds it in use", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		nd := w.set.Turns
		w.turn(t, func(tu *turns.Turn) { tu.DisplayCode = "A002" })
		w.turn(t, func(tu *turns.Turn) { tu.DisplayCode = "B3" })
		since := w.now.Add(-turns.ReopenWindow)
		lastSeq := int64(0)
		for _, c := range []struct {
			prefix  string
			padding int
			n       int
			held    bool
		}{{"A", 3, 1, false}, {"A", 3, 2, true}, {"B", 0, 3, true}, {"B", 1, 4, false}, {"A", 0, 5, false}} {
			n, held, seq, err := nd.DrawNumber(ctx, w.runID, "", c.prefix, c.padding, since)
			if err != nil || n != c.n || held != c.held || seq <= lastSeq {
				t.Fatalf("DrawNumber(%q, %d) = %d, %v, seq %d, %v; want %d, %v, a seq after %d",
					c.prefix, c.padding, n, held, seq, err, c.n, c.held, lastSeq)
			}
			lastSeq = seq
		}
	})

	t.Run("a code is in use while its turn is, or may come back, in the line", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		a := w.turn(t, func(tu *turns.Turn) { tu.DisplayCode = "A007" })
		since := w.now.Add(-turns.ReopenWindow)
		inUse := func(code string) bool {
			h, err := w.set.Turns.CodeInUse(ctx, w.runID, code, since)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		if !inUse("A007") || inUse("A008") {
			t.Fatal("A007 is in use, A008 is not")
		}
		set := func(status turns.Status, finished time.Time) {
			a.Status, a.FinishedAt = status, &finished
			if err := w.set.Turns.Update(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		set(turns.Cancelled, w.now) // may still be reopened
		if !inUse("A007") {
			t.Fatal("a turn finished within the reopen window keeps its code")
		}
		set(turns.Cancelled, since.Add(-time.Second))
		if inUse("A007") {
			t.Fatal("a turn finished before the window frees its code")
		}
		set(turns.NoShow, since.Add(-time.Hour)) // its customer may still arrive
		if !inUse("A007") {
			t.Fatal("a no-show keeps its code")
		}
	})

	t.Run("take follows the line and counts the active", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		low := w.turn(t, func(tu *turns.Turn) { tu.Priority = queues.PriorityLow })
		n1 := w.turn(t, nil)
		w.turn(t, func(tu *turns.Turn) { tu.Status = turns.Held })
		vh := w.turn(t, func(tu *turns.Turn) { tu.Priority = queues.PriorityVeryHigh })
		n2 := w.turn(t, nil)
		wl2 := w.turn(t, func(tu *turns.Turn) { tu.Status = turns.Waitlisted })
		wl1 := w.turn(t, func(tu *turns.Turn) { tu.Status, tu.Priority = turns.Waitlisted, queues.PriorityHigh })
		w.turn(t, func(tu *turns.Turn) { tu.Status = turns.Completed })

		var order []string
		for {
			var took turns.Turn
			var ok bool
			err := w.set.UoW.Do(ctx, func(ctx context.Context) error {
				var err error
				if took, ok, err = w.set.Turns.TakeNext(ctx, w.runID); err != nil || !ok {
					return err
				}
				took.Status = turns.Called
				return w.set.Turns.Update(ctx, took)
			})
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			order = append(order, took.ID)
		}
		if want := []string{vh.ID, n1.ID, n2.ID, low.ID}; !slices.Equal(order, want) {
			t.Fatalf("line order: want %v, got %v", want, order)
		}
		wl, ok, err := w.set.Turns.TakeWaitlisted(ctx, w.runID)
		if err != nil || !ok || wl.ID != wl1.ID {
			t.Fatalf("waitlist order: want %s, got %s %v", wl1.ID, wl.ID, err)
		}
		_ = wl2
		occ, err := w.set.Turns.Occupancy(ctx, w.runID)
		if err != nil || occ != (turns.Occupancy{Active: 5, Waitlisted: 2}) { // 4 called and 1 held; 2 waitlisted
			t.Fatalf("occupancy: want 5 active and 2 waitlisted, got %+v %v", occ, err)
		}
	})

	if concurrent {
		t.Run("take skips turns other transactions hold", func(t *testing.T) {
			w := newTurnsWorld(t, newSet(t))
			a := w.turn(t, nil)
			b := w.turn(t, nil)
			held := make(chan struct{})
			release := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- w.set.UoW.Do(ctx, func(ctx context.Context) error {
					got, ok, err := w.set.Turns.TakeNext(ctx, w.runID)
					if err != nil || !ok || got.ID != a.ID {
						close(held)
						return errors.New("first taker did not get the head")
					}
					close(held)
					<-release
					return nil
				})
			}()
			<-held
			got, ok, err := w.set.Turns.TakeNext(ctx, w.runID)
			close(release)
			if err != nil || !ok || got.ID != b.ID {
				t.Fatalf("second taker: want %s, got %s %v %v", b.ID, got.ID, ok, err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// runTurns3 is part 3 of RunTurns: list filters and pages by id; line
// version and waiting line; old line changes are pruned, recent ones kept;
// recent service times, newest first, of the queue.
func runTurns3(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("list filters and pages by id", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		a := w.turn(t, nil)
		at := w.now
		b := w.turn(t, func(tu *turns.Turn) { tu.Status, tu.ArrivedAt = turns.Called, &at })
		c := w.turn(t, func(tu *turns.Turn) { tu.Status, tu.ArrivedAt = turns.Completed, &at })
		ids := func(ts []turns.Turn, err error) []string {
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, tu := range ts {
				out = append(out, tu.ID)
			}
			return out
		}
		if got := ids(w.set.Turns.List(ctx, w.runID, nil, platform.PageRequest{Limit: 50})); !slices.Equal(got, []string{a.ID, b.ID, c.ID}) {
			t.Fatalf("all: %v", got)
		}
		if got := ids(w.set.Turns.List(ctx, w.runID, []turns.Status{turns.Waiting, turns.Completed}, platform.PageRequest{Limit: 50})); !slices.Equal(got, []string{a.ID, c.ID}) {
			t.Fatalf("filtered: %v", got)
		}
		if got := ids(w.set.Turns.List(ctx, w.runID, nil, platform.PageRequest{Limit: 1, After: a.ID})); !slices.Equal(got, []string{b.ID, c.ID}) {
			t.Fatalf("page (limit+1): %v", got)
		}
		if got := ids(w.set.Turns.ListArrivals(ctx, w.runID, platform.PageRequest{Limit: 50})); !slices.Equal(got, []string{b.ID}) {
			t.Fatalf("arrivals: %v", got)
		}
	})

	t.Run("line version and waiting line", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		if v, err := w.set.Turns.LineVersion(ctx, w.runID); err != nil || v != 0 {
			t.Fatalf("fresh run: %d %v", v, err)
		}
		v, keys, err := w.set.Turns.WaitingLine(ctx, w.runID)
		if err != nil || v != 0 || len(keys) != 0 {
			t.Fatalf("empty line: %d %v %v", v, keys, err)
		}
		b := w.turn(t, nil)
		a := w.turn(t, func(tu *turns.Turn) { tu.Priority = queues.PriorityHigh })
		w.turn(t, func(tu *turns.Turn) { tu.Status = turns.Held })
		first := turns.LineChange{Added: []turns.LineKey{b.Key(), a.Key()}}
		second := turns.LineChange{Removed: []turns.LineKey{{Rank: 3, Seq: 1 << 40}}, Reset: true}
		for i, c := range []turns.LineChange{first, second} {
			got, err := w.set.Turns.BumpLine(ctx, w.runID, c)
			if err != nil || got != int64(i+1) {
				t.Fatalf("bump %d: version %d %v", i, got, err)
			}
		}
		v, keys, err = w.set.Turns.WaitingLine(ctx, w.runID)
		if err != nil || v != 2 || !slices.Equal(keys, []turns.LineKey{a.Key(), b.Key()}) {
			t.Fatalf("line: %d %v %v", v, keys, err)
		}
		changes, err := w.set.Turns.LineChanges(ctx, w.runID, 0, 2)
		if err != nil || len(changes) != 2 || changes[0].Version != 1 || changes[1].Version != 2 ||
			!slices.Equal(changes[0].Added, first.Added) || len(changes[0].Removed) != 0 ||
			!slices.Equal(changes[1].Removed, second.Removed) || !changes[1].Reset || changes[0].Reset {
			t.Fatalf("changes: %+v %v", changes, err)
		}
		if later, _ := w.set.Turns.LineChanges(ctx, w.runID, 1, 2); len(later) != 1 || later[0].Version != 2 {
			t.Fatalf("changes after 1: %+v", later)
		}
		// A bump rolled back is no bump, and records nothing.
		_ = w.set.UoW.Do(ctx, func(ctx context.Context) error {
			_, _ = w.set.Turns.BumpLine(ctx, w.runID, turns.LineChange{})
			return errors.New("boom")
		})
		if v, _ := w.set.Turns.LineVersion(ctx, w.runID); v != 2 {
			t.Fatalf("after rollback: %d", v)
		}
		if all, _ := w.set.Turns.LineChanges(ctx, w.runID, 0, 10); len(all) != 2 {
			t.Fatalf("a rolled-back change was recorded: %+v", all)
		}
	})

	t.Run("old line changes are pruned, recent ones kept", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		const n = turns.LineChangesKept + 600
		err := w.set.UoW.Do(ctx, func(ctx context.Context) error {
			for range n {
				if _, err := w.set.Turns.BumpLine(ctx, w.runID, turns.LineChange{}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		recent, err := w.set.Turns.LineChanges(ctx, w.runID, n-turns.LineChangesKept, n)
		if err != nil || len(recent) != turns.LineChangesKept {
			t.Fatalf("the latest %d changes: got %d %v", turns.LineChangesKept, len(recent), err)
		}
		if all, _ := w.set.Turns.LineChanges(ctx, w.runID, 0, n); len(all) >= n {
			t.Fatalf("nothing was pruned: %d changes kept", len(all))
		}
	})

	t.Run("recent service times, newest first, of the queue", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		for i, s := range []float64{10, 20, 30} {
			at, secs := w.now.Add(time.Duration(i)*time.Minute), s
			w.turn(t, func(tu *turns.Turn) { tu.Status, tu.FinishedAt, tu.ServiceSeconds = turns.Completed, &at, &secs })
		}
		w.turn(t, func(tu *turns.Turn) { tu.Status = turns.Cancelled })
		got, err := w.set.Turns.RecentServiceSeconds(ctx, w.owned.QueueID, 2)
		if err != nil || !slices.Equal(got, []float64{30, 20}) {
			t.Fatalf("want [30 20], got %v %v", got, err)
		}
		if got, _ := w.set.Turns.RecentServiceSeconds(ctx, w.owned.QueueID2, 5); len(got) != 0 {
			t.Fatalf("another queue: %v", got)
		}
	})
}

// runTurns4 is part 4 of RunTurns: a turn's view context is what the
// separate reads return; deleting the entity deletes its turns; deleting a
// station unassigns it.
func runTurns4(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("a turn's view context is what the separate reads return", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		vs := w.set.Turns
		var done turns.Turn
		for i, s := range []float64{10, 20, 30} {
			at, secs := w.now.Add(time.Duration(i)*time.Minute), s
			done = w.turn(t, func(tu *turns.Turn) { tu.Status, tu.FinishedAt, tu.ServiceSeconds = turns.Completed, &at, &secs })
		}
		waiting := w.turn(t, nil)
		if _, err := w.set.Turns.BumpLine(ctx, w.runID, turns.LineChange{Added: []turns.LineKey{waiting.Key()}}); err != nil {
			t.Fatal(err)
		}
		got, vc, err := vs.GetForView(ctx, waiting.ID)
		if err != nil || !sameTurn(got, waiting) {
			t.Fatalf("turn: %+v %v", got, err)
		}
		q, err := OwnersOf(w.set).Queues.GetQueue(ctx, w.owned.QueueID)
		if err != nil {
			t.Fatal(err)
		}
		sts, err := OwnersOf(w.set).Queues.ListStations(ctx, w.owned.QueueID)
		if err != nil {
			t.Fatal(err)
		}
		if vc.Queue.ID != q.ID || vc.Queue.Name != q.Name || vc.Queue.Type != q.Type || vc.Queue.Timezone != q.Timezone ||
			vc.Queue.Dispatchers != q.Dispatchers {
			t.Fatalf("queue:\n got %+v\nwant %+v", vc.Queue, q)
		}
		if len(vc.Stations) != len(sts) || len(sts) != 1 || vc.Stations[0].ID != sts[0].ID || vc.Stations[0].Label != sts[0].Label {
			t.Fatalf("stations: got %+v, want %+v", vc.Stations, sts)
		}
		if vc.LineVersion != 1 || !vc.RunOpen {
			t.Fatalf("line version %d (want 1), run open %v (want true)", vc.LineVersion, vc.RunOpen)
		}
		if !slices.Equal(vc.ServiceSeconds, []float64{30, 20, 10}) {
			t.Fatalf("service times: want [30 20 10], got %v", vc.ServiceSeconds)
		}
		// A turn of any status, not only a waiting one.
		if _, vc, err := vs.GetForView(ctx, done.ID); err != nil || vc.LineVersion != 1 || !vc.RunOpen ||
			!slices.Equal(vc.ServiceSeconds, []float64{30, 20, 10}) {
			t.Fatalf("a completed turn's context: %+v %v", vc, err)
		}
		if _, _, err := vs.GetForView(ctx, "turn_missing"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing: %v", err)
		}
	})

	t.Run("deleting the entity deletes its turns", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		a := w.turn(t, nil)
		if err := w.set.UoW.Do(ctx, func(ctx context.Context) error { return w.set.Entities.Delete(ctx, w.owned.EntityID) }); err != nil {
			t.Fatal(err)
		}
		if _, err := w.set.Turns.Get(ctx, a.ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("turn survived its entity: %v", err)
		}
	})

	t.Run("deleting a station unassigns it", func(t *testing.T) {
		w := newTurnsWorld(t, newSet(t))
		a := w.turn(t, func(tu *turns.Turn) { tu.StationID = &w.station })
		if err := w.set.UoW.Do(ctx, func(ctx context.Context) error { return OwnersOf(w.set).Queues.DeleteStation(ctx, w.station) }); err != nil {
			t.Fatal(err)
		}
		got, err := w.set.Turns.Get(ctx, a.ID)
		if err != nil || got.StationID != nil {
			t.Fatalf("after the station's deletion: %v %v", got.StationID, err)
		}
	})
}

func sameTurn(a, b turns.Turn) bool {
	eqT := func(x, y *time.Time) bool { return x == nil && y == nil || x != nil && y != nil && x.Equal(*y) }
	eqS := func(x, y *string) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	eqF := func(x, y *float64) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	if len(a.FormResponse) != len(b.FormResponse) {
		return false
	}
	for k, v := range a.FormResponse {
		if b.FormResponse[k] != v {
			return false
		}
	}
	return a.ID == b.ID && a.AccountID == b.AccountID && a.QueueID == b.QueueID && a.RunID == b.RunID &&
		a.Number == b.Number && a.DisplayCode == b.DisplayCode && a.Status == b.Status && a.Priority == b.Priority &&
		a.Seq == b.Seq && a.PeopleCount == b.PeopleCount && eqS(a.Phone, b.Phone) && a.NotifyWhatsapp == b.NotifyWhatsapp &&
		eqS(a.StationID, b.StationID) && a.CallCount == b.CallCount && a.Reentries == b.Reentries &&
		a.HeldFrom == b.HeldFrom && a.ReopenTo == b.ReopenTo && eqF(a.ServiceSeconds, b.ServiceSeconds) &&
		eqS(a.IdempotencyKey, b.IdempotencyKey) && a.RequestHash == b.RequestHash &&
		eqT(a.ArrivedAt, b.ArrivedAt) && eqT(a.CalledAt, b.CalledAt) && eqT(a.StartedAt, b.StartedAt) &&
		eqT(a.FinishedAt, b.FinishedAt) && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		eqS(a.AppointmentID, b.AppointmentID)
}
