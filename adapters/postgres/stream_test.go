package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/test/pgtest"
)

// beginWithEvent opens a transaction on a connection of its own that has written an
// event of account acc (so it holds a transaction id), and returns the
// event's id.
func beginWithEvent(t *testing.T, db *postgres.DB, acc string) (pgx.Tx, string) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx, insertEventOn(t, tx, acc)
}

type execer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func insertEventOn(t *testing.T, q execer, acc string) string {
	t.Helper()
	id := platform.NewID(platform.PrefixEvent)
	var got string
	err := q.QueryRow(context.Background(),
		`INSERT INTO events (id, account_id, name, queue_id, run_id, data, occurred_at)
		 VALUES ($1, $2, 'turn.called', 'que_1', 'run_1', '{"displayCode":"A001"}', now()) RETURNING id`, id, acc).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func read(t *testing.T, l *postgres.StreamLog, acc string, after stream.Position) ([]string, bool, stream.Position) {
	t.Helper()
	entries, pending, err := l.Read(context.Background(), acc, after, 100)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.Event.ID
		after = e.Position
		if string(e.Event.Data) != `{"displayCode":"A001"}` || e.Event.RunID != "run_1" || e.Event.QueueID != "que_1" || e.Event.AccountID != acc {
			t.Fatalf("event read back wrong: %+v", e.Event)
		}
	}
	return ids, pending, after
}

// TestStreamHoldsBackEventsBehindARunningTransaction: an event committed by
// a later transaction is not read while an earlier transaction, which may
// still commit an event ordered before it, runs; once that one commits,
// both are read in order, and nothing is skipped.
func TestStreamHoldsBackEventsBehindARunningTransaction(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	l := postgres.NewStreamLog(db)
	head, err := l.Head(ctx, "acc_1")
	if err != nil {
		t.Fatal(err)
	}

	early, earlyID := beginWithEvent(t, db, "acc_1")
	late, lateID := beginWithEvent(t, db, "acc_1")
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ids, pending, pos := read(t, l, "acc_1", head)
	if len(ids) != 0 || !pending {
		t.Fatalf("with an older transaction running: read %v pending %v, want nothing and pending", ids, pending)
	}
	if err := early.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ids, pending, pos = read(t, l, "acc_1", pos)
	if len(ids) != 2 || ids[0] != earlyID || ids[1] != lateID || pending {
		t.Fatalf("read %v pending %v, want [%s %s] in transaction order", ids, pending, earlyID, lateID)
	}
	if ids, _, _ := read(t, l, "acc_1", pos); len(ids) != 0 {
		t.Fatalf("read again: %v", ids)
	}
	at, when, ok, err := l.Locate(ctx, "acc_1", lateID)
	if err != nil || !ok || at != pos || time.Since(when) > time.Minute {
		t.Fatalf("Locate = %v %v %v %v, want %v", at, when, ok, err, pos)
	}
	if _, _, ok, _ := l.Locate(ctx, "acc_2", lateID); ok {
		t.Fatal("Locate found another account's event")
	}
}

func TestStreamNeverReadsRolledBackEventsOrOtherAccounts(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	l := postgres.NewStreamLog(db)
	head, _ := l.Head(ctx, "acc_1")
	tx, _ := beginWithEvent(t, db, "acc_1")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	insertEventOn(t, db.Pool, "acc_2")
	kept := insertEventOn(t, db.Pool, "acc_1")
	ids, pending, _ := read(t, l, "acc_1", head)
	if len(ids) != 1 || ids[0] != kept || pending {
		t.Fatalf("read %v pending %v, want [%s]", ids, pending, kept)
	}
}

// TestStreamIgnoresTransactionsOfOtherDatabases: a long transaction on
// another database of the same server does not hold this one's stream
// back.
func TestStreamIgnoresTransactionsOfOtherDatabases(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	other := pgtest.New(t)
	l := postgres.NewStreamLog(db)
	head, _ := l.Head(ctx, "acc_1")
	beginWithEvent(t, other, "acc_9") // left open until the test ends
	id := insertEventOn(t, db.Pool, "acc_1")
	ids, pending, _ := read(t, l, "acc_1", head)
	if len(ids) != 1 || ids[0] != id || pending {
		t.Fatalf("read %v pending %v, want [%s] at once", ids, pending, id)
	}
}

// TestStreamNotifierHearsCommitsOnly: LISTEN hears an event's account once
// the unit of work that appended it commits (the writing process announces
// it after the commit, announce.go), or at once for an event appended
// outside one, and never a rolled-back one.
func TestStreamNotifierHearsCommitsOnly(t *testing.T) {
	db := pgtest.New(t)
	n := postgres.NewStreamNotifier(db)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var heard []string
	caughtUp := false
	done := make(chan error, 1)
	go func() {
		done <- n.Run(ctx, func(acc string) {
			mu.Lock()
			defer mu.Unlock()
			if acc == "" { // the wake-all once listening, for commits before LISTEN
				caughtUp = true
				return
			}
			heard = append(heard, acc)
		})
	}()
	// LISTEN must be in place before the commits: wait until the
	// notifier's backend is listening.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var listening bool
		_ = db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
			AND query = 'LISTEN `+postgres.StreamChannel+`')`).Scan(&listening)
		if listening {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the notifier never listened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	events := postgres.NewEvents(db)
	appendIn := func(acc string, fail error) error {
		return db.Do(ctx, func(ctx context.Context) error {
			e := platform.Event{ID: platform.NewID(platform.PrefixEvent), AccountID: acc, Name: "turn.called",
				QueueID: "que_1", RunID: "run_1", OccurredAt: time.Now().UTC()}
			if err := events.Append(ctx, e); err != nil {
				return err
			}
			return fail
		})
	}
	rollback := errors.New("roll back")
	if err := appendIn("acc_rolled_back", rollback); !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if err := appendIn("acc_1", nil); err != nil {
		t.Fatal(err)
	}
	waitHeard := func(k int) {
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			n := len(heard)
			mu.Unlock()
			if n >= k || time.Now().After(deadline) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitHeard(1)
	err := events.Append(ctx, platform.Event{ID: platform.NewID(platform.PrefixEvent), AccountID: "acc_2", Name: "turn.called",
		OccurredAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(heard)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 2 || heard[0] != "acc_1" || heard[1] != "acc_2" {
		t.Fatalf("heard %v, want [acc_1 acc_2]", heard)
	}
	if !caughtUp {
		t.Fatal("no wake-all once listening: commits made before LISTEN would go unsent")
	}
}
