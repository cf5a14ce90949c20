package postgres_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestTurnViewsCoalescedStayFresh: turn views read at once go out in
// batches (more readers than the batch slots), each reader gets its own
// turn, and a change another process committed is seen by every read that
// starts after the commit, batched or not.
func TestTurnViewsCoalescedStayFresh(t *testing.T) {
	url := pgtest.URL(t)
	reader, writer := openProcess(t, url), openProcess(t, url)
	ctx := context.Background()
	owned := writer.owners.Seed(t)
	const n = 6
	var ts [n]turns.Turn
	for i := range ts {
		ts[i] = writer.owners.Turn(t, owned, owned.QueueID)
	}

	// committed is, per turn, the call count last committed; readers check
	// that a read started after that commit sees at least it.
	var committed [n]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (g + k) % n
				floor := committed[i].Load()
				got, vc, err := reader.turns.GetForView(ctx, ts[i].ID)
				switch {
				case err != nil:
					errs <- err
					return
				case got.ID != ts[i].ID || got.RunID != ts[i].RunID || vc.Queue.ID != owned.QueueID:
					errs <- errors.New("a reader got another turn's view: " + got.ID + ", want " + ts[i].ID)
					return
				case int64(got.CallCount) < floor:
					errs <- errors.New("a read started after a commit did not see it: turn " + got.ID)
					return
				}
			}
		}()
	}
	for round := 1; round <= 60; round++ {
		i := round % n
		tu := ts[i]
		tu.CallCount = round
		if err := writer.turns.Update(ctx, tu); err != nil {
			t.Fatal(err)
		}
		committed[i].Store(int64(round))
		// And the writer's own next read, through the other process.
		got, _, err := reader.turns.GetForView(ctx, tu.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.CallCount != round {
			t.Fatalf("round %d: read after the commit sees call count %d", round, got.CallCount)
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if reader.db.CoalescedViewsForTest() == 0 {
		t.Error("no view was read in a batch: the test did not load the slots")
	}
}

// TestTurnViewsCoalescedCallerGoneAndMissing: a reader whose context ends
// while it waits gets its context's error and leaves the others' reads
// alone, and a missing turn read in a batch is not found, as alone.
func TestTurnViewsCoalescedCallerGoneAndMissing(t *testing.T) {
	p := openProcess(t, pgtest.URL(t))
	ctx := context.Background()
	owned := p.owners.Seed(t)
	tu := p.owners.Turn(t, owned, owned.QueueID)
	want, err := p.turns.Get(ctx, tu.ID)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch g % 4 {
				case 0:
					gone, cancel := context.WithCancel(ctx)
					cancel()
					if _, _, err := p.turns.GetForView(gone, tu.ID); !errors.Is(err, context.Canceled) {
						t.Errorf("a gone caller: %v, want context.Canceled", err)
					}
				case 1:
					if _, _, err := p.turns.GetForView(ctx, "turn_missing"); !platform.IsCode(err, platform.CodeNotFound) {
						t.Errorf("a missing turn: %v, want not found", err)
					}
				default:
					got, _, err := p.turns.GetForView(ctx, tu.ID)
					if err != nil {
						t.Error(err)
					} else if !reflect.DeepEqual(got, want) {
						t.Errorf("got %+v, want %+v", got, want)
					}
				}
			}()
		}
		wg.Wait()
	}
}

// TestTurnViewInAUnitOfWorkSeesItsWrites: inside a unit of work the view
// is read in its transaction (never batched with others), so it sees the
// unit's own uncommitted change.
func TestTurnViewInAUnitOfWorkSeesItsWrites(t *testing.T) {
	p := openProcess(t, pgtest.URL(t))
	ctx := context.Background()
	owned := p.owners.Seed(t)
	tu := p.owners.Turn(t, owned, owned.QueueID)
	errRollback := errors.New("roll back")
	err := p.db.Do(ctx, func(ctx context.Context) error {
		changed := tu
		changed.CallCount = 7
		if err := p.turns.Update(ctx, changed); err != nil {
			return err
		}
		got, _, err := p.turns.GetForView(ctx, tu.ID)
		if err != nil {
			return err
		}
		if got.CallCount != 7 {
			t.Errorf("inside the unit: call count %d, want its own 7", got.CallCount)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	got, _, err := p.turns.GetForView(ctx, tu.ID)
	if err != nil || got.CallCount != 0 {
		t.Fatalf("after the rollback: %d, %v; want 0", got.CallCount, err)
	}
}

// TestTurnViewsBatchReadsEachTurnOnce: a batch of several turns, some
// asked for by several readers, one missing, gives each reader its own
// turn as Get reads it (a missing one pgx.ErrNoRows), in statements of
// every size the batch may take (one distinct turn, two, three padded to
// four).
func TestTurnViewsBatchReadsEachTurnOnce(t *testing.T) {
	p := openProcess(t, pgtest.URL(t))
	ctx := context.Background()
	owned := p.owners.Seed(t)
	var want = map[string]turns.Turn{}
	var ids []string
	for range 3 {
		tu := p.owners.Turn(t, owned, owned.QueueID)
		got, err := p.turns.Get(ctx, tu.ID)
		if err != nil {
			t.Fatal(err)
		}
		want[tu.ID] = got
		ids = append(ids, tu.ID)
	}
	a, b, c := ids[0], ids[1], ids[2]
	for _, batch := range [][]string{
		{a, a, a},
		{a, b, a, b},
		{a, "turn_missing", b, a, c, b},
		{"turn_missing", "turn_missing"},
	} {
		got, errs := p.db.ReadViewsBatchedForTest(ctx, batch)
		for i, id := range batch {
			w, ok := want[id]
			switch {
			case !ok:
				if !errors.Is(errs[i], pgx.ErrNoRows) {
					t.Errorf("batch %v, reader %d of missing %s: %v, want pgx.ErrNoRows", batch, i, id, errs[i])
				}
			case errs[i] != nil:
				t.Errorf("batch %v, reader %d of %s: %v", batch, i, id, errs[i])
			case !reflect.DeepEqual(got[i], w):
				t.Errorf("batch %v, reader %d: got %+v, want %+v", batch, i, got[i], w)
			}
		}
		// Each reader has a copy of its own: changing one changes no other.
		if len(batch) > 1 && errs[0] == nil && batch[0] == batch[2] {
			got[0].FormResponse["probe"] = "x"
			if _, shared := got[2].FormResponse["probe"]; shared {
				t.Errorf("batch %v: two readers of %s share a view", batch, batch[0])
			}
		}
	}
}
