package contract

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
)

// EventLog is the event log as the application reads it: appended to by
// the bus, listed, streamed and read by the display board.
type EventLog interface {
	events.Store
	List(ctx context.Context, accountID, after string, limit int) ([]platform.Event, error)
}

// RunEventLog checks that every reader of the log sees the bytes the core
// marshalled when it raised the event, in memory and PostgreSQL mode
// alike, so a subscriber decodes the same payload whichever backend runs.
func RunEventLog(t *testing.T, newSet NewSet) {
	t.Run("readers see the emitted bytes", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		account := NewAccount(t, set)
		ctx := context.Background()
		station := "sta_1"
		e, err := platform.NewEvent(account, turns.TurnCalled{CallCount: 2, TurnFields: turns.TurnFields{DisplayCode: "A001",
			Number: 1, Priority: "NORMAL", QueueID: "que_1", QueueRunID: "run_1", StationID: &station, Status: "CALLED", TurnID: "turn_1"}},
			time.Now().UTC().Truncate(time.Microsecond))
		if err != nil {
			t.Fatal(err)
		}
		e.QueueID, e.RunID = "que_1", "run_1"
		bus := Subscribe(set)
		if err := set.UoW.Do(ctx, func(ctx context.Context) error { return bus.Emit(ctx, e) }); err != nil {
			t.Fatal(err)
		}
		listed, err := eventLog(t, set).List(ctx, account, "", 0)
		if err != nil || len(listed) != 1 {
			t.Fatalf("list: %d events, %v", len(listed), err)
		}
		entries, _, err := set.StreamLog.Read(ctx, account, stream.Position{}, 10)
		if err != nil || len(entries) != 1 {
			t.Fatalf("stream: %d entries, %v", len(entries), err)
		}
		calls, err := set.Calls.RecentCalls(ctx, account, "run_1", 10)
		if err != nil || len(calls) != 1 {
			t.Fatalf("recent calls: %d events, %v", len(calls), err)
		}
		for reader, got := range map[string]platform.Event{"list": listed[0], "stream": entries[0].Event, "recent calls": calls[0]} {
			if !bytes.Equal(got.Data, e.Data) {
				t.Errorf("%s: data %s, emitted %s", reader, got.Data, e.Data)
			}
			if got.ID != e.ID || got.Name != e.Name || got.RunID != "run_1" || got.QueueID != "que_1" || !got.OccurredAt.Equal(e.OccurredAt) {
				t.Errorf("%s: event %+v, emitted %+v", reader, got, e)
			}
			var call turns.TurnCalled
			if err := got.Decode(&call); err != nil || call.StationID == nil || *call.StationID != station || call.CallCount != 2 {
				t.Errorf("%s: decoded %+v, %v", reader, call, err)
			}
		}
	})
	t.Run("an event without data has the empty object", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		account := NewAccount(t, set)
		ctx := context.Background()
		bus := Subscribe(set)
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			return bus.Emit(ctx, platform.Event{AccountID: account, Name: platform.EventName[queues.QueueClosed](), OccurredAt: time.Now()})
		})
		if err != nil {
			t.Fatal(err)
		}
		listed, err := eventLog(t, set).List(ctx, account, "", 0)
		if err != nil || len(listed) != 1 || string(listed[0].Data) != "{}" {
			t.Fatalf("list: %+v, %v", listed, err)
		}
	})
	t.Run("a rolled-back event is in no reader", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		account := NewAccount(t, set)
		ctx := context.Background()
		bus := Subscribe(set)
		_ = set.UoW.Do(ctx, func(ctx context.Context) error {
			if err := bus.Emit(ctx, platform.Event{AccountID: account, Name: platform.EventName[queues.QueueClosed](), RunID: "run_1", OccurredAt: time.Now()}); err != nil {
				return err
			}
			return context.Canceled
		})
		listed, err := eventLog(t, set).List(ctx, account, "", 0)
		if err != nil || len(listed) != 0 {
			t.Fatalf("list after rollback: %+v, %v", listed, err)
		}
		entries, _, err := set.StreamLog.Read(ctx, account, stream.Position{}, 10)
		if err != nil || len(entries) != 0 {
			t.Fatalf("stream after rollback: %+v, %v", entries, err)
		}
	})
}

// RunStreamNotifier checks the stream.Notifier contract: once running, a
// committed event of an account wakes that account (spurious wakes are
// allowed, so a rollback is not checked).
func RunStreamNotifier(t *testing.T, newSet NewSet) {
	t.Run("a committed event wakes its account", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		account := NewAccount(t, set)
		bus := Subscribe(set)
		ctx, cancel := context.WithCancel(context.Background())
		woken := make(chan string, 64)
		done := make(chan error, 1)
		go func() {
			done <- set.StreamNotifier.Run(ctx, func(account string) {
				select {
				case woken <- account:
				default:
				}
			})
		}()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v", err)
			}
		})
		// Run may start listening after it is called: emit until woken.
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			err := set.UoW.Do(context.Background(), func(ctx context.Context) error {
				return bus.Emit(ctx, platform.Event{AccountID: account, Name: platform.EventName[queues.QueueClosed](), OccurredAt: time.Now()})
			})
			if err != nil {
				t.Fatal(err)
			}
			for waiting := true; waiting; {
				select {
				case a := <-woken:
					if a == account {
						return
					}
				case <-tick.C:
					waiting = false
				case <-deadline:
					t.Fatal("no wake for the account within 10 s")
				}
			}
		}
	})
}

// RunStreamLogPositions checks Head and Locate of the stream log: an
// event emitted after Head is read after it, and Locate finds an event of
// the account and nothing else.
func RunStreamLogPositions(t *testing.T, newSet NewSet) {
	t.Run("head, read and locate", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		account := NewAccount(t, set)
		ctx := context.Background()
		bus := Subscribe(set)
		emit := func() platform.Event {
			e := platform.Event{ID: platform.NewID(platform.PrefixEvent), AccountID: account, Name: platform.EventName[queues.QueueClosed](),
				OccurredAt: time.Now().UTC().Truncate(time.Microsecond)}
			if err := set.UoW.Do(ctx, func(ctx context.Context) error { return bus.Emit(ctx, e) }); err != nil {
				t.Fatal(err)
			}
			return e
		}
		before := emit()
		head, err := set.StreamLog.Head(ctx, account)
		if err != nil {
			t.Fatal(err)
		}
		after := emit()
		entries, _, err := set.StreamLog.Read(ctx, account, head, 10)
		if err != nil || len(entries) != 1 || entries[0].Event.ID != after.ID {
			t.Fatalf("read after head: %+v, %v", entries, err)
		}
		pos, at, ok, err := set.StreamLog.Locate(ctx, account, before.ID)
		if err != nil || !ok || !at.Equal(before.OccurredAt) {
			t.Fatalf("locate %s: %v %v %v", before.ID, at, ok, err)
		}
		entries, _, err = set.StreamLog.Read(ctx, account, pos, 10)
		if err != nil || len(entries) != 1 || entries[0].Event.ID != after.ID {
			t.Fatalf("read after the located event: %+v, %v", entries, err)
		}
		for _, c := range []struct{ account, id string }{{account, "evt_unknown"}, {"acc_other", before.ID}} {
			if _, _, ok, err := set.StreamLog.Locate(ctx, c.account, c.id); err != nil || ok {
				t.Fatalf("locate %s of %s: ok %v, %v", c.id, c.account, ok, err)
			}
		}
	})
}
