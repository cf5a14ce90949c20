package display_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/testkit"
)

// fakeQueues holds one queue with one run and two stations of acc_1.
type fakeQueues struct{ q queues.Queue }

func (f fakeQueues) GetQueue(_ context.Context, acc, id string) (queues.Queue, error) {
	if id != f.q.ID {
		return queues.Queue{}, platform.NotFound("queue", id)
	}
	if acc != f.q.AccountID {
		return queues.Queue{}, platform.ForeignResource("queue")
	}
	return f.q, nil
}

func (f fakeQueues) GetRun(_ context.Context, acc, id string) (queues.Run, error) {
	if id != "run_1" {
		return queues.Run{}, platform.NotFound("queue run", id)
	}
	if acc != f.q.AccountID {
		return queues.Run{}, platform.ForeignResource("queue run")
	}
	return queues.Run{ID: "run_1", AccountID: acc, QueueID: f.q.ID, Status: queues.RunOpen, IntakeOpen: true}, nil
}

func (f fakeQueues) ListStations(context.Context, string, string) ([]queues.Station, error) {
	return []queues.Station{{ID: "sta_1", Label: "Window 1"}, {ID: "sta_2", Label: "Window 2"}}, nil
}

// fakeTurns returns the called and the waiting turns it holds.
type fakeTurns struct{ called, waiting []turns.View }

func (f fakeTurns) List(_ context.Context, _, _ string, fl turns.ListFilter, _ platform.PageRequest) (platform.Page[turns.View], error) {
	switch {
	case len(fl.Statuses) == 1 && fl.Statuses[0] == turns.Called:
		return platform.Page[turns.View]{Items: f.called}, nil
	case len(fl.Statuses) == 1 && fl.Statuses[0] == turns.Waiting:
		return platform.Page[turns.View]{Items: f.waiting}, nil
	}
	return platform.Page[turns.View]{}, fmt.Errorf("the board asked for %v", fl.Statuses)
}

// fakeCalls returns its events, newest first.
type fakeCalls struct{ events []platform.Event }

func (f fakeCalls) RecentCalls(_ context.Context, _, _ string, limit int) ([]platform.Event, error) {
	return f.events[:min(limit, len(f.events))], nil
}

func str(s string) *string { return &s }

func newService(t *testing.T, ts fakeTurns, calls fakeCalls) (*display.Service, *platformtest.Clock) {
	t.Helper()
	clock := platformtest.NewClock(time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	q := queues.Queue{ID: "que_1", AccountID: "acc_1", Name: "Pickup", ArrivalBoard: &queues.ArrivalBoard{
		Columns: []queues.BoardColumn{{Key: str("plate"), Label: str("Plate")}}}}
	return display.NewService(set.DisplayTokens, fakeQueues{q}, ts, calls, store, testkit.Bus(set), clock), clock
}

func TestTokensAreShownOnceStoredHashedAndRevocable(t *testing.T) {
	ctx := context.Background()
	svc, clock := newService(t, fakeTurns{}, fakeCalls{})
	c, err := svc.Create(ctx, "acc_1", "run_1", display.CreateInput{Label: str("Lobby")})
	if err != nil {
		t.Fatal(err)
	}
	if !display.LooksLikeToken(c.Value) || c.Hash != display.HashToken(c.Value) || strings.Contains(c.Hash, c.Value) ||
		c.RunID != "run_1" || c.QueueID != "que_1" || !strings.HasPrefix(c.ID, "dsp_") {
		t.Fatalf("created %+v", c)
	}
	got, err := svc.Resolve(ctx, c.Value)
	if err != nil || got.ID != c.ID {
		t.Fatalf("Resolve: %v %v", got, err)
	}
	for _, bad := range []string{"", "qmsd_short", strings.ToUpper(c.Value), c.Value + "x", "qmsd_" + strings.Repeat("a", 32)} {
		if _, err := svc.Resolve(ctx, bad); !platform.IsCode(err, display.CodeInvalidDisplayToken) {
			t.Errorf("Resolve(%q): %v", bad, err)
		}
	}
	if _, err := svc.Revoke(ctx, "acc_2", c.ID); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account revokes: %v", err)
	}
	clock.Advance(time.Minute)
	r, err := svc.Revoke(ctx, "acc_1", c.ID)
	if err != nil || r.RevokedAt == nil || !r.RevokedAt.Equal(clock.Now()) {
		t.Fatalf("Revoke: %+v %v", r, err)
	}
	clock.Advance(time.Minute)
	again, _ := svc.Revoke(ctx, "acc_1", c.ID)
	if !again.RevokedAt.Equal(*r.RevokedAt) {
		t.Fatal("revoking again moved revokedAt")
	}
	if _, err := svc.Resolve(ctx, c.Value); !platform.IsCode(err, display.CodeDisplayTokenRevoked) {
		t.Fatalf("Resolve a revoked token: %v", err)
	}
	if _, err := svc.Create(ctx, "acc_2", "run_1", display.CreateInput{}); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("a token for another account's run: %v", err)
	}
	if _, err := svc.Create(ctx, "acc_1", "run_1", display.CreateInput{Label: str("")}); !platform.IsCode(err, platform.CodeValidation) {
		t.Fatalf("an empty label: %v", err)
	}
}

func TestLiveTokensPerRunAreBounded(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, fakeTurns{}, fakeCalls{})
	var first display.Created
	for i := 0; i < display.MaxTokensPerRun; i++ {
		c, err := svc.Create(ctx, "acc_1", "run_1", display.CreateInput{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = c
		}
	}
	if _, err := svc.Create(ctx, "acc_1", "run_1", display.CreateInput{}); !platform.IsCode(err, display.CodeTooManyDisplayTokens) {
		t.Fatalf("one too many: %v", err)
	}
	if _, err := svc.Revoke(ctx, "acc_1", first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, "acc_1", "run_1", display.CreateInput{}); err != nil {
		t.Fatalf("after revoking one: %v", err)
	}
}

// TestBoardShowsCallsWithStationsAndOnlyTheBoardColumns: the turns called
// now, latest call first, with their station and the arrivalBoard answers
// only; the recent calls from the log, each turn once, those called now
// left out, at most RecentCalls; how many wait, and the wait of the last.
func TestBoardShowsCallsWithStationsAndOnlyTheBoardColumns(t *testing.T) {
	ctx := context.Background()
	at := func(m int) *time.Time { x := time.Date(2026, 5, 4, 9, m, 0, 0, time.UTC); return &x }
	called := []turns.View{
		{Turn: turns.Turn{ID: "turn_a", DisplayCode: "A001", CalledAt: at(1), FormResponse: map[string]string{"plate": "AAA", "secret": "x"}},
			Station: &turns.StationRef{ID: "sta_1", Label: "Window 1"}},
		{Turn: turns.Turn{ID: "turn_b", DisplayCode: "A002", CalledAt: at(5), FormResponse: map[string]string{"secret": "y"}},
			Station: &turns.StationRef{ID: "sta_2", Label: "Window 2"}},
	}
	var evs []platform.Event
	call := func(id, code string, station string) platform.Event {
		var st *string
		if station != "" {
			st = &station
		}
		e, err := platform.NewEvent("acc_1", turns.TurnCalled{TurnFields: turns.TurnFields{TurnID: id, DisplayCode: code, StationID: st}}, *at(0))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	evs = append(evs, call("turn_b", "A002", "sta_2"), call("turn_a", "A001", "sta_1"))
	evs = append(evs, call("turn_9", "A009", "sta_2"), call("turn_9", "A009", "sta_1"), call("turn_8", "A008", ""))
	for i := 7; i >= 1; i-- {
		evs = append(evs, call(fmt.Sprintf("turn_old%d", i), fmt.Sprintf("B%03d", i), "sta_1"))
	}
	pos := func(n int) *int { return &n }
	rng := &turns.WaitRange{P50Minutes: 9, P90Minutes: 14, Samples: 5}
	waiting := []turns.View{
		{Turn: turns.Turn{ID: "turn_w2", DisplayCode: "A012"}, Position: pos(2), WaitEstimate: &turns.WaitEstimate{Minutes: 12, Range: rng}},
		{Turn: turns.Turn{ID: "turn_w1", DisplayCode: "A011"}, Position: pos(1), WaitEstimate: &turns.WaitEstimate{Minutes: 4}},
	}
	svc, _ := newService(t, fakeTurns{called, waiting}, fakeCalls{evs})
	c, _ := svc.Create(ctx, "acc_1", "run_1", display.CreateInput{})
	tok, _ := svc.Resolve(ctx, c.Value)
	b, err := svc.Board(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if b.Queue.Name != "Pickup" || len(b.Columns) != 1 || b.Columns[0] != (display.Column{Key: "plate", Label: "Plate"}) {
		t.Fatalf("board head %+v", b)
	}
	if len(b.Calling) != 2 || b.Calling[0].TurnID != "turn_b" || b.Calling[1].TurnID != "turn_a" {
		t.Fatalf("calling %+v, want the latest call first", b.Calling)
	}
	if got := b.Calling[1]; got.Station.Label != "Window 1" || len(got.Columns) != 1 || got.Columns["plate"] != "AAA" {
		t.Fatalf("turn_a on the board %+v: only the plate column", got)
	}
	if w := b.Waiting; w.Count != 2 || w.WaitMinutes == nil || *w.WaitMinutes != 12 || w.WaitRange != rng || strings.Join(w.Next, " ") != "A011 A012" {
		t.Fatalf("waiting %+v, want 2, next A011 A012, and the last one's wait (12 min, 9–14)", w)
	}
	if len(b.Calling[0].Columns) != 0 {
		t.Fatalf("turn_b shows %v", b.Calling[0].Columns)
	}
	var recent []string
	for _, r := range b.Recent {
		label := ""
		if r.Station != nil {
			label = r.Station.Label
		}
		recent = append(recent, r.DisplayCode+"@"+label)
	}
	want := "A009@Window 2 A008@ B007@Window 1 B006@Window 1 B005@Window 1 B004@Window 1"
	if strings.Join(recent, " ") != want {
		t.Fatalf("recent %v, want %s", recent, want)
	}
}
