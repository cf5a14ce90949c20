package contract

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// notifyMsg is a QUEUED SMS of o's turn for moment and occurrence, made
// at now.
func notifyMsg(now time.Time, o Owned, turnID, runID, moment string, occ int) notify.Message {
	return notify.Message{ID: platform.NewID(notify.PrefixMessage), AccountID: o.AccountID, TurnID: turnID, QueueID: o.QueueID,
		RunID: runID, Moment: moment, Occurrence: occ, Channel: notify.ChannelSMS, To: "+34600111222", Language: "es",
		Params: map[string]string{"code": "A1", "queue": "Caja"}, Status: notify.StatusQueued, CreatedAt: now, UpdatedAt: now}
}

// RunNotify runs the notify.Repository contract.
func RunNotify(t *testing.T, newSet NewSet) {
	runNotify1(t, newSet)
	runNotify2(t, newSet)
	runNotify3(t, newSet)
}

// runNotify1 is part 1 of RunNotify: stores every field; one message per
// turn, moment and occurrence; a rolled-back message leaves no row and frees
// its key.
func runNotify1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	t.Run("stores every field; one message per turn, moment and occurrence", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		m := notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentCalled, 1)
		if ok, err := set.Notify.Insert(ctx, m); err != nil || !ok {
			t.Fatalf("insert: %v %v", ok, err)
		}
		again := notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentCalled, 1)
		if ok, err := set.Notify.Insert(ctx, again); err != nil || ok {
			t.Fatalf("a second message with the key was stored: %v %v", ok, err)
		}
		if ok, err := set.Notify.Insert(ctx, notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentCalled, 2)); err != nil || !ok {
			t.Fatalf("another occurrence: %v %v", ok, err)
		}
		got, err := set.Notify.Get(ctx, m.ID)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("stored %+v, read back %+v (%v)", m, got, err)
		}
		sent := now.Add(time.Second)
		m.Status, m.ProviderMessageID, m.SentAt, m.Attempts, m.Body, m.Provider = notify.StatusSent, platform.Ptr("SM1"), &sent, 1, "hola", "twilio"
		m.UpdatedAt = sent
		if err := set.UoW.Do(ctx, func(ctx context.Context) error { return set.Notify.Update(ctx, m) }); err != nil {
			t.Fatal(err)
		}
		if got, err := set.Notify.ByProviderID(ctx, "twilio", "SM1"); err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("by provider id: %+v %v", got, err)
		}
		if _, err := set.Notify.ByProviderID(ctx, "whatsapp", "SM1"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("another provider's id: %v", err)
		}
		list, err := set.Notify.ListByTurn(ctx, tu.ID)
		if err != nil || len(list) != 2 || list[0].ID != m.ID {
			t.Fatalf("list: %+v %v", list, err)
		}
		latest, err := set.Notify.LatestTo(ctx, "+34600111222")
		if err != nil || latest.TurnID != tu.ID {
			t.Fatalf("latest: %+v %v", latest, err)
		}
		if _, err := set.Notify.LatestTo(ctx, "+34600999999"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("latest to a number never written to: %v", err)
		}
	})

	t.Run("a rolled-back message leaves no row and frees its key", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		boom := platform.Conflict("BOOM", "roll back", nil)
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if _, err := set.Notify.Insert(ctx, notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentJoined, 1)); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("want the unit's error, got %v", err)
		}
		if ok, err := set.Notify.Insert(ctx, notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentJoined, 1)); err != nil || !ok {
			t.Fatalf("the key was kept by a rolled-back insert: %v %v", ok, err)
		}
	})
}

// runNotify2 is part 2 of RunNotify: suppression, near state, queue
// settings, cleared numbers; finished turns forget their phone after the
// cutoff, the others keep it.
func runNotify2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	t.Run("suppression, near state, queue settings, cleared numbers", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		do := func(f func(ctx context.Context) error) {
			t.Helper()
			if err := set.UoW.Do(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		do(func(ctx context.Context) error {
			return set.Notify.SetSuppressed(ctx, o.AccountID, "+34600111222", true, now)
		})
		do(func(ctx context.Context) error {
			return set.Notify.SetSuppressed(ctx, o.AccountID, "+34600111222", true, now)
		})
		if off, err := set.Notify.Suppressed(ctx, o.AccountID, "+34600111222"); err != nil || !off {
			t.Fatalf("suppressed: %v %v", off, err)
		}
		if off, _ := set.Notify.Suppressed(ctx, "acc_other", "+34600111222"); off {
			t.Fatal("suppression leaked to another account")
		}
		do(func(ctx context.Context) error {
			return set.Notify.SetSuppressed(ctx, o.AccountID, "+34600111222", false, now)
		})
		if off, _ := set.Notify.Suppressed(ctx, o.AccountID, "+34600111222"); off {
			t.Fatal("START did not lift the suppression")
		}

		if st, err := set.Notify.Near(ctx, tu.ID); err != nil || st != (notify.NearState{}) {
			t.Fatalf("no state yet: %+v %v", st, err)
		}
		st := notify.NearState{TurnID: tu.ID, AccountID: o.AccountID, Occurrence: 2, Sent: true}
		do(func(ctx context.Context) error { return set.Notify.PutNear(ctx, st) })
		st.Sent = false
		do(func(ctx context.Context) error { return set.Notify.PutNear(ctx, st) })
		if got, err := set.Notify.Near(ctx, tu.ID); err != nil || got != st {
			t.Fatalf("near: %+v %v", got, err)
		}

		if _, ok, err := set.Notify.QueueSettings(ctx, o.QueueID); ok || err != nil {
			t.Fatalf("no settings yet: %v %v", ok, err)
		}
		qs := notify.QueueSettings{Moments: &[]string{notify.MomentCalled}, NearFrontAhead: platform.Ptr(2), Language: platform.Ptr("fr")}
		do(func(ctx context.Context) error { return set.Notify.PutQueueSettings(ctx, o.AccountID, o.QueueID, qs) })
		if got, ok, err := set.Notify.QueueSettings(ctx, o.QueueID); !ok || err != nil || !reflect.DeepEqual(got, qs) {
			t.Fatalf("settings: %+v %v %v", got, ok, err)
		}

		old := notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentJoined, 1)
		old.CreatedAt = now.Add(-48 * time.Hour)
		recent := notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentCalled, 1)
		for _, m := range []notify.Message{old, recent} {
			if _, err := set.Notify.Insert(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		do(func(ctx context.Context) error {
			var err error
			n, err = set.Notify.ClearPhones(ctx, now.Add(-24*time.Hour), 100)
			return err
		})
		a, _ := set.Notify.Get(ctx, old.ID)
		b, _ := set.Notify.Get(ctx, recent.ID)
		if n != 1 || a.To != "" || b.To != recent.To {
			t.Fatalf("cleared %d: old %q, recent %q", n, a.To, b.To)
		}
	})

	t.Run("finished turns forget their phone after the cutoff, the others keep it", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		finished, recent, waiting := OwnersOf(set).Turn(t, o, o.QueueID), OwnersOf(set).Turn(t, o, o.QueueID), OwnersOf(set).Turn(t, o, o.QueueID2)
		old, late := now.Add(-48*time.Hour), now.Add(-time.Hour)
		for _, c := range []struct {
			tu turns.Turn
			at *time.Time
		}{{finished, &old}, {recent, &late}, {waiting, nil}} {
			tu := c.tu
			tu.Phone = platform.Ptr("+34600111222")
			if c.at != nil {
				tu.Status, tu.FinishedAt, tu.ReopenTo = turns.Completed, c.at, turns.Waiting
			}
			if err := set.UoW.Do(ctx, func(ctx context.Context) error { return OwnersOf(set).Turns.Update(ctx, tu) }); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			var err error
			n, err = set.Notify.ClearTurnPhones(ctx, now.Add(-24*time.Hour), 100)
			return err
		})
		if err != nil || n != 1 {
			t.Fatalf("cleared %d (%v), want 1", n, err)
		}
		for id, want := range map[string]bool{finished.ID: false, recent.ID: true, waiting.ID: true} {
			got, err := OwnersOf(set).Turns.Get(ctx, id)
			if err != nil || (got.Phone != nil) != want {
				t.Errorf("turn %s: phone %v, want kept %v (%v)", id, got.Phone, want, err)
			}
		}
	})
}

// runNotify3 is part 3 of RunNotify: concurrent decisions of one key store
// one message.
func runNotify3(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	t.Run("concurrent decisions of one key store one message", func(t *testing.T) {
		// Side by side on PostgreSQL (the unique key decides); one after
		// another in memory.
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		var wg sync.WaitGroup
		var mu sync.Mutex
		stored := 0
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := set.UoW.Do(ctx, func(ctx context.Context) error {
					ok, err := set.Notify.Insert(ctx, notifyMsg(now, o, tu.ID, tu.RunID, notify.MomentNoShow, 1))
					if ok {
						mu.Lock()
						stored++
						mu.Unlock()
					}
					return err
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if stored != 1 {
			t.Fatalf("%d of 8 concurrent decisions stored a message", stored)
		}
	})
}
