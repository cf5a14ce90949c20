package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
)

// countingBuild builds a run's view as the id of the event it follows
// ("" first), counting the builds.
type countingBuild struct {
	builds atomic.Int64
	fail   atomic.Bool
}

func (b *countingBuild) build(_ context.Context, accountID, runID, _ string, es []stream.Entry) (string, error) {
	b.builds.Add(1)
	if b.fail.Load() {
		return "", errors.New("storage away")
	}
	if es == nil {
		return accountID + "/" + runID + ":first", nil
	}
	return es[len(es)-1].Event.ID, nil
}

func nextUpdate(t *testing.T, m *stream.Member[string]) *stream.Update[string] {
	t.Helper()
	u, err := m.Next(context.Background(), 2*time.Second)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return u
}

// TestRunsBuildOncePerEventForEveryMember: a hundred screens of one run
// get every event of their run, in order, each with the one view built
// for it; another run's events reach none of them.
func TestRunsBuildOncePerEventForEveryMember(t *testing.T) {
	w := newWorld(t, stream.Options{})
	var b countingBuild
	runs := stream.NewRuns(w.hub, allScopes, nil, b.build, stream.RunsOptions{})
	var members []*stream.Member[string]
	for i := 0; i < 100; i++ {
		m, first, err := runs.Join(context.Background(), "acc_1", "run_1")
		if err != nil {
			t.Fatal(err)
		}
		if first.Entry != nil || first.View != "acc_1/run_1:first" {
			t.Fatalf("first view %+v", first)
		}
		t.Cleanup(m.Close)
		members = append(members, m)
	}
	if n := b.builds.Load(); n != 1 {
		t.Fatalf("%d builds for 100 joins, want 1", n)
	}
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, w.emit(turnCalled("acc_1", "que_1", "run_1"))...)
		w.emit(turnCalled("acc_1", "que_2", "run_2"))
	}
	index := map[string]int{}
	for i, id := range ids {
		index[id] = i
	}
	for _, m := range members {
		for i, want := range ids {
			// Events that arrived together share the view built after
			// the last of them: never one from before the event.
			u := nextUpdate(t, m)
			if v, ok := index[u.View]; u.Entry.Event.ID != want || !ok || v < i {
				t.Fatalf("got %q (entry %s), want entry %s with its view or a later one", u.View, u.Entry.Event.ID, want)
			}
		}
		if _, err := m.Next(context.Background(), 50*time.Millisecond); !errors.Is(err, stream.ErrIdle) {
			t.Fatalf("want nothing more: %v", err)
		}
	}
	if n := b.builds.Load(); n > 1+5 {
		t.Fatalf("%d builds for 5 events and 100 screens, want at most 6", n)
	}
}

// TestRunsMemberThatFallsBehindIsCutOff: a screen whose few updates are
// not taken is cut off with ErrOverflow (after the ones it holds); the
// others go on.
func TestRunsMemberThatFallsBehindIsCutOff(t *testing.T) {
	w := newWorld(t, stream.Options{})
	var b countingBuild
	runs := stream.NewRuns(w.hub, allScopes, nil, b.build, stream.RunsOptions{Buffer: 2})
	slow, _, err := runs.Join(context.Background(), "acc_1", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, _, err := runs.Join(context.Background(), "acc_1", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	for i := 0; i < 4; i++ {
		id := w.emit(turnCalled("acc_1", "que_1", "run_1"))[0]
		if u := nextUpdate(t, fast); u.View != id {
			t.Fatalf("fast got %q, want %s", u.View, id)
		}
	}
	nextUpdate(t, slow)
	nextUpdate(t, slow)
	if _, err := slow.Next(context.Background(), time.Second); !errors.Is(err, stream.ErrOverflow) {
		t.Fatalf("the slow screen: %v, want ErrOverflow", err)
	}
}

// TestRunsGroupLingersThenEnds: after its last screen leaves, a run's
// group goes on following the run for a while, so screens reconnecting
// (a storm) join without a build and miss nothing; then it ends.
func TestRunsGroupLingersThenEnds(t *testing.T) {
	w := newWorld(t, stream.Options{})
	var b countingBuild
	runs := stream.NewRuns(w.hub, allScopes, nil, b.build, stream.RunsOptions{Linger: 300 * time.Millisecond})
	m, _, err := runs.Join(context.Background(), "acc_1", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	id := w.emit(turnCalled("acc_1", "que_1", "run_1"))[0]
	deadline := time.Now().Add(2 * time.Second)
	for b.builds.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	m, first, err := runs.Join(context.Background(), "acc_1", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	if first.View != id || b.builds.Load() != 2 {
		t.Fatalf("rejoined with %q after %d builds, want the lingering group's view of %s after 2", first.View, b.builds.Load(), id)
	}
	m.Close()
	deadline = time.Now().Add(3 * time.Second)
	for runs.Groups() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the group did not end after lingering")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunsFirstBuildFailing: while a group's first view cannot be built
// (storage away) a join waits (up to its context) as the build is
// retried, and once storage is back the group serves its screens.
func TestRunsFirstBuildFailing(t *testing.T) {
	w := newWorld(t, stream.Options{})
	var b countingBuild
	b.fail.Store(true)
	runs := stream.NewRuns(w.hub, allScopes, nil, b.build, stream.RunsOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := runs.Join(ctx, "acc_1", "run_1"); err == nil {
		t.Fatal("joined a run whose view cannot be built")
	}
	b.fail.Store(false)
	deadline := time.Now().Add(15 * time.Second)
	for {
		m, first, err := runs.Join(context.Background(), "acc_1", "run_1")
		if err == nil {
			m.Close()
			if first.View != "acc_1/run_1:first" {
				t.Fatalf("first view %q", first.View)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("join after storage is back: %v", err)
		}
	}
}

// TestRunsConcurrentJoinsAndLeaves: screens joining and leaving one run
// while events arrive (a storm) each get every event after their first
// view, in order, none twice (run with -race).
func TestRunsConcurrentJoinsAndLeaves(t *testing.T) {
	w := newWorld(t, stream.Options{})
	var b countingBuild
	runs := stream.NewRuns(w.hub, allScopes, nil, b.build, stream.RunsOptions{Linger: 10 * time.Millisecond})
	stop := make(chan struct{})
	var emitted sync.WaitGroup
	emitted.Add(1)
	go func() {
		defer emitted.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.emit(platform.Event{AccountID: "acc_1", Name: "turn.called", QueueID: "que_1", RunID: "run_1"})
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				m, _, err := runs.Join(context.Background(), "acc_1", "run_1")
				if err != nil {
					t.Error(err)
					return
				}
				seen := map[string]bool{}
				for k := 0; k < 3; k++ {
					u, err := m.Next(context.Background(), 2*time.Second)
					if err != nil {
						t.Error(err)
						break
					}
					if seen[u.Entry.Event.ID] {
						t.Errorf("%s twice", u.Entry.Event.ID)
					}
					seen[u.Entry.Event.ID] = true
				}
				m.Close()
			}
		}()
	}
	wg.Wait()
	close(stop)
	emitted.Wait()
}

// TestRunsHandInternalEventsWithoutABuild: an internal event of the run (a
// display token changed) reaches every member as it is, with the view the
// group has, at the cost of no build; a member that joins afterwards
// finds it in its first update's Internal; no client subscription of the
// account receives it; Latest serves the group's view without a join.
func TestRunsHandInternalEventsWithoutABuild(t *testing.T) {
	w := newWorld(t, stream.Options{})
	var b countingBuild
	const internal = "display_token.changed"
	runs := stream.NewRuns(w.hub, allScopes, nil, b.build, stream.RunsOptions{Internal: []string{internal}})
	if _, ok := runs.Latest("acc_1", "run_1"); ok {
		t.Fatal("Latest of a run no group follows")
	}
	m, first, err := runs.Join(context.Background(), "acc_1", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	api := w.subscribe(stream.Request{AccountID: "acc_1"})
	called := w.emit(turnCalled("acc_1", "que_1", "run_1"))[0]
	if u := nextUpdate(t, m); u.Entry.Event.ID != called || u.View != called {
		t.Fatalf("after the call: %+v", u)
	}
	builds := b.builds.Load()
	changed := w.emit(platform.Event{AccountID: "acc_1", Name: internal, QueueID: "que_1", RunID: "run_1",
		Data: json.RawMessage(`{"tokenId":"dsp_1","revoked":true}`)})[0]
	u := nextUpdate(t, m)
	if u.Entry.Event.ID != changed || u.View != called {
		t.Fatalf("the internal event's update %+v: want its entry with the view after the call", u)
	}
	if n := b.builds.Load(); n != builds {
		t.Fatalf("an internal event cost %d builds", n-builds)
	}
	late, lateFirst, err := runs.Join(context.Background(), "acc_1", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(late.Close)
	if len(lateFirst.Internal) != 1 || lateFirst.Internal[0].Event.ID != changed || len(first.Internal) != 0 {
		t.Fatalf("a late joiner's Internal %+v (the first's %+v)", lateFirst.Internal, first.Internal)
	}
	if v, ok := runs.Latest("acc_1", "run_1"); !ok || v != called {
		t.Fatalf("Latest: %q %v", v, ok)
	}
	if e, err := api.Next(context.Background(), time.Second); err != nil || e.Event.ID != called {
		t.Fatalf("the client's stream: %+v %v", e, err)
	}
	if e, err := api.Next(context.Background(), 200*time.Millisecond); !errors.Is(err, stream.ErrIdle) {
		t.Fatalf("a client received an internal event: %+v %v", e, err)
	}
}

// TestRunsBuildOnInternalChanges: an internal event that changes the view
// (RunsOptions.Changes: turn_state.changed) reaches the group whatever its
// scopes and costs one build for every member, as a run's event does;
// members that joined later find it in no Internal list; no client
// subscription of the account receives it.
func TestRunsBuildOnInternalChanges(t *testing.T) {
	w := newWorld(t, stream.Options{})
	var b countingBuild
	const changes = "turn_state.changed"
	runs := stream.NewRuns(w.hub, allScopes, []string{"turn.called"}, b.build, stream.RunsOptions{Changes: []string{changes}})
	var members []*stream.Member[string]
	for range 3 {
		m, _, err := runs.Join(context.Background(), "acc_1", "run_1")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		members = append(members, m)
	}
	api := w.subscribe(stream.Request{AccountID: "acc_1"})
	builds := b.builds.Load()
	held := w.emit(platform.Event{AccountID: "acc_1", Name: changes, QueueID: "que_1", RunID: "run_1",
		Data: json.RawMessage(`{"turnId":"turn_1","status":"HELD"}`)})[0]
	for _, m := range members {
		if u := nextUpdate(t, m); u.Entry.Event.ID != held || u.View != held {
			t.Fatalf("the change's update %+v: want its entry with the view built after it", u)
		}
	}
	if n := b.builds.Load(); n != builds+1 {
		t.Fatalf("%d builds for one change and three members, want 1", n-builds)
	}
	late, first, err := runs.Join(context.Background(), "acc_1", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(late.Close)
	if len(first.Internal) != 0 || first.View != held {
		t.Fatalf("a late joiner's first update %+v", first)
	}
	if e, err := api.Next(context.Background(), 200*time.Millisecond); !errors.Is(err, stream.ErrIdle) {
		t.Fatalf("a client received an internal event: %+v %v", e, err)
	}
}
