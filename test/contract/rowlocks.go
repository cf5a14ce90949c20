package contract

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
)

// RunRowLocks runs the contract of the ForUpdate reads the use cases take
// before they change a record (turns, runs, forwards, messages): a read
// for update answers what Get does, NOT_FOUND for a missing record, and
// holds the record until its unit of work ends, so a second unit of work
// that reads it for update sees the first one's write. PostgreSQL holds
// the row (FOR UPDATE); memory runs one unit of work at a time. It also
// covers the plain updates and lists no other suite calls
// (UpdateAccount, UpdateQueue, ListRuns).
func RunRowLocks(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)

	t.Run("a turn read for update waits for the unit of work that holds it", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		missing(t, func() error { _, err := set.Turns.GetForUpdate(ctx, "turn_missing"); return err })
		heldUntilCommit(t, set.UoW, func(ctx context.Context) (turns.Turn, error) { return set.Turns.GetForUpdate(ctx, tu.ID) },
			func(ctx context.Context, tu turns.Turn) error { tu.CallCount++; return set.Turns.Update(ctx, tu) },
			func(tu turns.Turn) int { return tu.CallCount })
	})

	t.Run("a run read for update waits for the unit of work that holds it", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		run := OwnersOf(set).Turn(t, o, o.QueueID).RunID
		missing(t, func() error { _, err := set.Queues.GetRunForUpdate(ctx, "run_missing"); return err })
		heldUntilCommit(t, set.UoW, func(ctx context.Context) (queues.Run, error) { return set.Queues.GetRunForUpdate(ctx, run) },
			func(ctx context.Context, r queues.Run) error {
				r.UpdatedAt = r.UpdatedAt.Add(time.Second)
				return set.Queues.UpdateRun(ctx, r)
			},
			func(r queues.Run) int { return int(r.UpdatedAt.Unix()) })
	})

	t.Run("a forward read for update waits for the unit of work that holds it", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		fw := workflow.Forward{ID: platform.NewID(workflow.PrefixForward), AccountID: o.AccountID, LinkID: platform.NewID(platform.PrefixLink),
			FromTurnID: tu.ID, FromQueueID: o.QueueID, FromRunID: tu.RunID, ToQueueID: o.QueueID2, Trigger: workflow.TriggerComplete,
			Status: workflow.ForwardPending, CreatedAt: now, UpdatedAt: now}
		if _, err := set.Forwards.CreateForward(ctx, fw); err != nil {
			t.Fatal(err)
		}
		missing(t, func() error { _, err := set.Forwards.GetForwardForUpdate(ctx, "fwd_missing"); return err })
		heldUntilCommit(t, set.UoW, func(ctx context.Context) (workflow.Forward, error) {
			return set.Forwards.GetForwardForUpdate(ctx, fw.ID)
		},
			func(ctx context.Context, f workflow.Forward) error {
				f.Attempts++
				return set.Forwards.UpdateForward(ctx, f)
			},
			func(f workflow.Forward) int { return f.Attempts })
	})

	t.Run("a message read for update waits for the unit of work that holds it", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		m := notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentCalled, 1)
		if ok, err := set.Notify.Insert(ctx, m); err != nil || !ok {
			t.Fatalf("insert: %v %v", ok, err)
		}
		missing(t, func() error { _, err := set.Notify.GetForUpdate(ctx, "msg_missing"); return err })
		heldUntilCommit(t, set.UoW, func(ctx context.Context) (notify.Message, error) { return set.Notify.GetForUpdate(ctx, m.ID) },
			func(ctx context.Context, m notify.Message) error { m.Attempts++; return set.Notify.Update(ctx, m) },
			func(m notify.Message) int { return m.Attempts })
	})

	t.Run("accounts and queues update, runs list newest first", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		later := now.Add(time.Minute)
		err := set.Accounts.UpdateAccount(ctx, accounts.Account{ID: o.AccountID, Name: "Renamed", Plan: accounts.PlanFree, CreatedAt: now, UpdatedAt: later})
		if err != nil {
			t.Fatal(err)
		}
		if a, err := set.Accounts.GetAccount(ctx, o.AccountID); err != nil || a.Name != "Renamed" || a.Plan != accounts.PlanFree || !a.UpdatedAt.Equal(later) {
			t.Fatalf("account after update: %+v %v", a, err)
		}
		q, err := set.Queues.GetQueue(ctx, o.QueueID)
		if err != nil {
			t.Fatal(err)
		}
		q.Name, q.Subtitle, q.UpdatedAt = "Renamed", platform.Ptr("Desk 2"), later
		if err := set.Queues.UpdateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		if got, err := set.Queues.GetQueue(ctx, o.QueueID); err != nil || got.Name != "Renamed" || got.Subtitle == nil || *got.Subtitle != "Desk 2" || !got.UpdatedAt.Equal(later) {
			t.Fatalf("queue after update: %+v %v", got, err)
		}
		var runs []string
		for i := range 3 {
			at := now.Add(time.Duration(i) * time.Hour)
			r := queues.Run{ID: platform.NewID(platform.PrefixRun), AccountID: o.AccountID, QueueID: o.QueueID, Status: queues.RunClosed,
				CreatedAt: at, UpdatedAt: at}
			if err := set.Queues.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r.ID)
		}
		got, err := set.Queues.ListRuns(ctx, o.QueueID, 2)
		if err != nil || len(got) != 2 || got[0].ID != runs[2] || got[1].ID != runs[1] {
			t.Fatalf("ListRuns(2): %v %v, want the newest two of %v, newest first", ids(got), err, runs)
		}
		if other, err := set.Queues.ListRuns(ctx, o.QueueID2, 10); err != nil || len(other) != 0 {
			t.Fatalf("ListRuns of a queue without runs: %v %v", ids(other), err)
		}
	})
}

func ids(runs []queues.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// missing fails unless read answers NOT_FOUND.
func missing(t *testing.T, read func() error) {
	t.Helper()
	if err := read(); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("a missing record read for update: %v, want NOT_FOUND", err)
	}
}

// heldUntilCommit takes a record with lock in one unit of work and, while
// that one holds it, starts a second that takes it too; the first writes
// (write adds one to what count reads) after a pause and commits. The
// second must see the write: it waited for the first.
func heldUntilCommit[T any](t *testing.T, set interface {
	Do(ctx context.Context, f func(ctx context.Context) error) error
}, lock func(ctx context.Context) (T, error), write func(ctx context.Context, v T) error, count func(T) int) {
	t.Helper()
	ctx := context.Background()
	var before int
	held, first := make(chan struct{}), make(chan error, 1)
	go func() {
		first <- set.Do(ctx, func(ctx context.Context) error {
			v, err := lock(ctx)
			if err != nil {
				close(held)
				return err
			}
			before = count(v)
			close(held)
			time.Sleep(150 * time.Millisecond) // the second is waiting now
			return write(ctx, v)
		})
	}()
	<-held
	var seen int
	err := set.Do(ctx, func(ctx context.Context) error {
		v, err := lock(ctx)
		seen = count(v)
		return err
	})
	if err := <-first; err != nil {
		t.Fatalf("the first unit of work: %v", err)
	}
	if err != nil {
		t.Fatalf("the second unit of work: %v", err)
	}
	if seen != before+1 {
		t.Fatalf("the second read for update saw %d, want %d: it did not wait for the first to commit", seen, before+1)
	}
}
