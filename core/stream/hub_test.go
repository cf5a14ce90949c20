package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/testkit"
)

var allScopes = accounts.NewScopeSet(accounts.AllScopes)

type world struct {
	t     *testing.T
	store *memory.Store
	bus   *events.Bus
	clock *platformtest.Clock
	hub   *stream.Hub
}

func newWorld(t *testing.T, opts stream.Options) *world {
	t.Helper()
	clock := platformtest.NewClock(time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	bus := testkit.Bus(set) // the memory log copies each event, in its transaction
	hub := stream.NewHub(set.StreamLog, clock, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { hub.Listen(ctx, set.StreamNotifier); close(done) }()
	t.Cleanup(func() { hub.Close(); cancel(); <-done })
	return &world{t: t, store: store, bus: bus, clock: clock, hub: hub}
}

// emit commits one transaction raising the events and returns their ids.
func (w *world) emit(evs ...platform.Event) []string {
	w.t.Helper()
	ids := make([]string, len(evs))
	err := w.store.Do(context.Background(), func(ctx context.Context) error {
		for i, e := range evs {
			e.ID = platform.NewID(platform.PrefixEvent)
			if e.OccurredAt.IsZero() {
				e.OccurredAt = w.clock.Now()
			}
			ids[i] = e.ID
			if err := w.bus.Emit(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return ids
}

func turnCalled(account, queue, run string) platform.Event {
	return platform.Event{AccountID: account, Name: platform.EventName[turns.TurnCalled](), QueueID: queue, RunID: run,
		Data: json.RawMessage(`{"displayCode":"A001","queueRunId":"` + run + `","turnId":"turn_x"}`)}
}

func (w *world) subscribe(req stream.Request) *stream.Subscription {
	w.t.Helper()
	if req.Filter.Scopes == nil {
		req.Filter.Scopes = allScopes
	}
	s, err := w.hub.Subscribe(context.Background(), req)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(s.Close)
	return s
}

// next waits for the next event.
func next(t *testing.T, s *stream.Subscription) stream.Entry {
	t.Helper()
	e, err := s.Next(context.Background(), 2*time.Second)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return e
}

// quiet checks that nothing more arrives.
func quiet(t *testing.T, s *stream.Subscription) {
	t.Helper()
	if e, err := s.Next(context.Background(), 100*time.Millisecond); !errors.Is(err, stream.ErrIdle) {
		t.Fatalf("want nothing more, got %v %v", e.Event.ID, err)
	}
}

func TestLiveEventsInCommitOrderFilteredByAccountQueueRunAndScope(t *testing.T) {
	w := newWorld(t, stream.Options{})
	all := w.subscribe(stream.Request{AccountID: "acc_1"})
	byRun := w.subscribe(stream.Request{AccountID: "acc_1", Filter: stream.Filter{RunID: "run_2"}})
	byQueue := w.subscribe(stream.Request{AccountID: "acc_1", Filter: stream.Filter{QueueID: "que_1"}})
	queuesOnly := w.subscribe(stream.Request{AccountID: "acc_1",
		Filter: stream.Filter{Scopes: accounts.NewScopeSet([]accounts.Scope{accounts.ScopeQueuesWrite})}})

	a := w.emit(turnCalled("acc_1", "que_1", "run_1"), turnCalled("acc_1", "que_2", "run_2"))
	w.emit(turnCalled("acc_2", "que_9", "run_9")) // another account's
	b := w.emit(platform.Event{AccountID: "acc_1", Name: platform.EventName[queues.QueueClosed](), QueueID: "que_1", RunID: "run_1"})
	w.emit(platform.Event{AccountID: "acc_1", Name: "thing.unknown", QueueID: "que_1"}) // no module: no one

	for i, want := range []string{a[0], a[1], b[0]} {
		if got := next(t, all).Event.ID; got != want {
			t.Fatalf("event %d: got %s, want %s", i, got, want)
		}
	}
	quiet(t, all)
	if got := next(t, byRun).Event.ID; got != a[1] {
		t.Fatalf("run filter: got %s", got)
	}
	quiet(t, byRun)
	if got := next(t, byQueue).Event.ID; got != a[0] {
		t.Fatalf("queue filter: got %s", got)
	}
	if got := next(t, byQueue).Event.ID; got != b[0] {
		t.Fatalf("queue filter: got %s", got)
	}
	quiet(t, byQueue)
	// queues:write reads queue.* events, not turn.* ones.
	if got := next(t, queuesOnly).Event; got.ID != b[0] || got.Name != platform.EventName[queues.QueueClosed]() {
		t.Fatalf("scope filter: got %s %s", got.ID, got.Name)
	}
	quiet(t, queuesOnly)
}

func TestRolledBackEventsAreNeverSent(t *testing.T) {
	w := newWorld(t, stream.Options{})
	s := w.subscribe(stream.Request{AccountID: "acc_1"})
	err := w.store.Do(context.Background(), func(ctx context.Context) error {
		if err := w.bus.Emit(ctx, turnCalled("acc_1", "que_1", "run_1")); err != nil {
			return err
		}
		return errors.New("the use case fails after emitting")
	})
	if err == nil {
		t.Fatal("want the failure")
	}
	ok := w.emit(turnCalled("acc_1", "que_1", "run_1"))
	if got := next(t, s).Event.ID; got != ok[0] {
		t.Fatalf("got %s, want the committed %s", got, ok[0])
	}
	quiet(t, s)
}

func TestResumeAfterLastEventIDReplaysWhatWasMissedThenGoesLive(t *testing.T) {
	w := newWorld(t, stream.Options{PageSize: 3})
	var ids []string
	for i := 0; i < 10; i++ {
		ids = append(ids, w.emit(turnCalled("acc_1", "que_1", "run_1"))...)
	}
	s := w.subscribe(stream.Request{AccountID: "acc_1", LastEventID: ids[2]})
	if s.Gap() {
		t.Fatal("a retained id reported as a gap")
	}
	later := w.emit(turnCalled("acc_1", "que_1", "run_1"))
	want := append(append([]string{}, ids[3:]...), later...)
	for i, id := range want {
		if got := next(t, s).Event.ID; got != id {
			t.Fatalf("event %d: got %s, want %s", i, got, id)
		}
	}
	quiet(t, s)
}

func TestResumeWithAFilterReplaysOnlyMatchingEvents(t *testing.T) {
	w := newWorld(t, stream.Options{PageSize: 2})
	first := w.emit(turnCalled("acc_1", "que_1", "run_1"))
	var want []string
	for i := 0; i < 6; i++ {
		w.emit(turnCalled("acc_1", "que_2", "run_2"))
		want = append(want, w.emit(turnCalled("acc_1", "que_1", "run_1"))...)
	}
	s := w.subscribe(stream.Request{AccountID: "acc_1", LastEventID: first[0], Filter: stream.Filter{RunID: "run_1"}})
	for i, id := range want {
		if got := next(t, s).Event.ID; got != id {
			t.Fatalf("event %d: got %s, want %s", i, got, id)
		}
	}
	quiet(t, s)
}

func TestUnknownOrExpiredLastEventIDIsAGap(t *testing.T) {
	w := newWorld(t, stream.Options{Retention: time.Hour})
	old := w.emit(turnCalled("acc_1", "que_1", "run_1"))
	other := w.emit(turnCalled("acc_2", "que_1", "run_1"))
	w.clock.Advance(2 * time.Hour)
	for _, id := range []string{"evt_unknown", old[0], other[0]} {
		s := w.subscribe(stream.Request{AccountID: "acc_1", LastEventID: id})
		if !s.Gap() {
			t.Errorf("LastEventID %s: no gap reported", id)
		}
		quiet(t, s) // nothing is replayed
		s.Close()
	}
	recent := w.emit(turnCalled("acc_1", "que_1", "run_1"))
	s := w.subscribe(stream.Request{AccountID: "acc_1", LastEventID: recent[0]})
	if s.Gap() {
		t.Error("a recent id is a gap")
	}
}

func TestASlowSubscriberIsCutOffWithoutHoldingUpOthers(t *testing.T) {
	w := newWorld(t, stream.Options{Buffer: 4})
	slow := w.subscribe(stream.Request{AccountID: "acc_1"})
	fast := w.subscribe(stream.Request{AccountID: "acc_1"})
	if n := w.hub.Subscribers(); n != 2 {
		t.Fatalf("Subscribers = %d", n)
	}
	var ids []string
	for i := 0; i < 10; i++ {
		ids = append(ids, w.emit(turnCalled("acc_1", "que_1", "run_1"))...)
		if got := next(t, fast).Event.ID; got != ids[i] {
			t.Fatalf("fast subscriber: got %s, want %s", got, ids[i])
		}
	}
	if _, err := slow.Next(context.Background(), time.Second); !errors.Is(err, stream.ErrOverflow) {
		t.Fatalf("slow subscriber: %v, want ErrOverflow", err)
	}
	if n := w.hub.Subscribers(); n != 1 {
		t.Fatalf("Subscribers after the cut = %d, want 1", n)
	}
	// It comes back from the last event it got and misses nothing.
	again := w.subscribe(stream.Request{AccountID: "acc_1", LastEventID: ids[0]})
	for i := 1; i < 10; i++ {
		if got := next(t, again).Event.ID; got != ids[i] {
			t.Fatalf("after reconnecting: got %s, want %s", got, ids[i])
		}
	}
}

// TestABurstLargerThanTheBufferReachesASubscriberThatKeepsUp commits a
// backlog several buffers long at once (what an outage leaves behind): a
// subscriber that reads steadily, slower than the feed could push, gets
// every event and is never cut off by the size of the feed's reads.
func TestABurstLargerThanTheBufferReachesASubscriberThatKeepsUp(t *testing.T) {
	w := newWorld(t, stream.Options{Buffer: 8})
	sub := w.subscribe(stream.Request{AccountID: "acc_1"})
	evs := make([]platform.Event, 60)
	for i := range evs {
		evs[i] = turnCalled("acc_1", "que_1", "run_1")
	}
	ids := w.emit(evs...)
	for i, id := range ids {
		if got := next(t, sub).Event.ID; got != id {
			t.Fatalf("event %d: got %s, want %s", i, got, id)
		}
		time.Sleep(2 * time.Millisecond) // writing to a client takes time
	}
	quiet(t, sub)
}

func TestCloseEndsSubscriptions(t *testing.T) {
	w := newWorld(t, stream.Options{})
	s := w.subscribe(stream.Request{AccountID: "acc_1"})
	done := make(chan error, 1)
	go func() { _, err := s.Next(context.Background(), time.Minute); done <- err }()
	time.Sleep(20 * time.Millisecond)
	w.hub.Close()
	select {
	case err := <-done:
		if !errors.Is(err, stream.ErrClosed) {
			t.Fatalf("Next after Close: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Next still waiting after Close")
	}
	if _, err := w.hub.Subscribe(context.Background(), stream.Request{AccountID: "acc_1"}); !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if n := w.hub.Subscribers(); n != 0 {
		t.Fatalf("Subscribers = %d", n)
	}
}

// TestJoiningWhileEventsCommitLosesAndRepeatsNothing subscribes with a
// Last-Event-ID while other goroutines commit events: whatever lands between
// the replay and the live feed arrives exactly once, in order.
func TestJoiningWhileEventsCommitLosesAndRepeatsNothing(t *testing.T) {
	w := newWorld(t, stream.Options{PageSize: 5})
	first := w.emit(turnCalled("acc_1", "que_1", "run_1"))
	const writers, each = 4, 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < each; j++ {
				w.emit(turnCalled("acc_1", "que_1", "run_1"))
			}
		}()
	}
	close(start)
	time.Sleep(2 * time.Millisecond)
	s := w.subscribe(stream.Request{AccountID: "acc_1", LastEventID: first[0]})
	// A live subscriber that joined from the start is the reference order.
	wg.Wait()
	seen := map[string]bool{}
	var last stream.Position
	for i := 0; i < writers*each; i++ {
		e := next(t, s)
		if seen[e.Event.ID] {
			t.Fatalf("event %s twice", e.Event.ID)
		}
		if !last.Less(e.Position) {
			t.Fatalf("out of order: %v after %v", e.Position, last)
		}
		seen[e.Event.ID], last = true, e.Position
	}
	quiet(t, s)
	if len(seen) != writers*each {
		t.Fatalf("%d events, want %d", len(seen), writers*each)
	}
}

func TestFilterMatch(t *testing.T) {
	turnsOnly := accounts.NewScopeSet([]accounts.Scope{accounts.ScopeTurnsRead})
	cases := []struct {
		f    stream.Filter
		name string
		want bool
	}{
		{stream.Filter{Scopes: turnsOnly}, platform.EventName[turns.TurnCreated](), true},
		{stream.Filter{Scopes: turnsOnly}, platform.EventName[queues.QueueOpened](), false},
		{stream.Filter{Scopes: turnsOnly}, platform.EventName[appointments.AppointmentScheduled](), false},
		{stream.Filter{Scopes: accounts.NewScopeSet([]accounts.Scope{accounts.ScopeAppointmentsWrite})}, platform.EventName[appointments.AppointmentCompleted](), true},
		{stream.Filter{Scopes: allScopes, Names: []string{platform.EventName[turns.TurnCalled]()}}, platform.EventName[turns.TurnCreated](), false},
		{stream.Filter{Scopes: allScopes, Names: []string{platform.EventName[turns.TurnCalled]()}}, platform.EventName[turns.TurnCalled](), true},
		{stream.Filter{Scopes: allScopes}, "webhook.something", false},
	}
	for _, c := range cases {
		if got := c.f.Match(platform.Event{Name: c.name}); got != c.want {
			t.Errorf("%v on %s = %v", c.f, c.name, got)
		}
	}
}

func TestMessageIsTheWebhookBodyWithTheEventID(t *testing.T) {
	e := platform.Event{ID: "evt_1", Name: platform.EventName[turns.TurnCalled](), Data: json.RawMessage(`{"turnId":"turn_1"}`),
		OccurredAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.FixedZone("x", 3600))}
	m := stream.MessageOf(e)
	if got := fmt.Sprintf("%s %s %s %s", m.ID, m.Event, m.Data, m.CreatedAt); got != `evt_1 turn.called {"turnId":"turn_1"} 2026-03-01T08:00:00.000Z` {
		t.Fatal(got)
	}
	if d := stream.MessageOf(platform.Event{}).Data; string(d) != "{}" {
		t.Fatalf("data of an event without data: %q", d)
	}
}

// TestMemoryLogKeepsTwiceTheRetention: memory mode's log drops events
// older than twice the retained window, so it does not grow for ever.
func TestMemoryLogKeepsTwiceTheRetention(t *testing.T) {
	set, store := testkit.MemorySet(t, nil)
	log, bus := set.StreamLog, testkit.Bus(set)
	at := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	emit := func(when time.Time) string {
		e := platform.Event{ID: platform.NewID(platform.PrefixEvent), AccountID: "acc_1", Name: platform.EventName[turns.TurnCreated](), OccurredAt: when}
		if err := store.Do(context.Background(), func(ctx context.Context) error { return bus.Emit(ctx, e) }); err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	old := emit(at)
	recent := emit(at.Add(stream.DefaultRetention))
	emit(at.Add(2*stream.DefaultRetention + time.Hour))
	if _, _, ok, _ := log.Locate(context.Background(), "acc_1", old); ok {
		t.Fatal("an event older than twice the retention is kept")
	}
	if _, _, ok, _ := log.Locate(context.Background(), "acc_1", recent); !ok {
		t.Fatal("an event within twice the retention was dropped")
	}
}
