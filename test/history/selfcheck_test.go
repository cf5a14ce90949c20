package history

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// These tests feed the checks made-up histories that break each rule, so a
// check that passes on the real server is known to be able to fail.

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func fakeOp(kind, run, turn string, start, end int, status int, view map[string]any) *Op {
	b, _ := json.Marshal(view)
	return &Op{Kind: kind, Run: run, Turn: turn, Method: http.MethodPost, Start: at(start), End: at(end), Status: status, Body: b}
}

func failures(ck *checker, name string) (checked, failed int) {
	if inv := ck.m[name]; inv != nil {
		return inv.checked, inv.failed
	}
	return 0, 0
}

func TestChecksCatchBrokenHistories(t *testing.T) {
	c := &runInfo{name: "C", runID: "run_c", maxTurns: 1, waitlist: true}
	wl := &workload{w: &world{runs: []*runInfo{c}, byRun: map[string]*runInfo{"run_c": c}}, c: &caller{h: &History{}}}

	t.Run("5xx and transport errors", func(t *testing.T) {
		ck := newChecker()
		checkAnswers(ck, []*Op{{Status: 500}, {Err: "connection reset"}, {Status: 409}})
		if _, f := failures(ck, "no 5xx answer"); f != 1 {
			t.Fatalf("5xx failures: %d", f)
		}
		if _, f := failures(ck, "no transport error"); f != 1 {
			t.Fatalf("transport failures: %d", f)
		}
	})
	t.Run("a turn handed to two next calls", func(t *testing.T) {
		ck := newChecker()
		v := map[string]any{"id": "turn_1", "callCount": 1, "status": "CALLED"}
		checkCalls(ck, []*Op{fakeOp("next", "C", "turn_1", 0, 5, 201, v), fakeOp("next", "C", "turn_1", 1, 6, 201, v)})
		if _, f := failures(ck, "no turn handed to two next/call answers: (turnId, callCount) unique"); f != 1 {
			t.Fatalf("failures: %d", f)
		}
	})
	t.Run("an answer with the previous updatedAt", func(t *testing.T) {
		ck := newChecker()
		checkUpdatedAt(ck, []*Op{
			fakeOp("complete", "C", "turn_1", 100, 110, 201, map[string]any{"id": "turn_1", "updatedAt": at(50)}),
			fakeOp("complete", "C", "turn_2", 100, 110, 201, map[string]any{"id": "turn_2", "updatedAt": at(105)}),
		})
		if ch, f := failures(ck, "dispatch answer shows the committed updatedAt (within the request)"); ch != 2 || f != 1 {
			t.Fatalf("checked %d, failed %d", ch, f)
		}
	})
	t.Run("a later arrival overtakes the waitlist", func(t *testing.T) {
		name := "no later arrival overtakes a WAITLISTED turn (autoPromote off)"
		x := fakeOp("intake", "C", "", 0, 10, 201, map[string]any{"id": "turn_x", "status": "WAITLISTED"})
		y := fakeOp("intake", "C", "", 20, 30, 201, map[string]any{"id": "turn_y", "status": "WAITING"})
		ck := newChecker()
		ops := []*Op{x, y}
		wl.checkWaitlistOrder(ck, ops, opsByTurn(ops))
		if _, f := failures(ck, name); f != 1 {
			t.Fatalf("overtaking not caught: %d", f)
		}
		// Released (promoted by hand) before y came: no window covers y.
		rel := fakeOp("release", "C", "turn_x", 12, 15, 201, map[string]any{"id": "turn_x", "status": "WAITING"})
		ck = newChecker()
		ops = []*Op{x, rel, y}
		wl.checkWaitlistOrder(ck, ops, opsByTurn(ops))
		if ch, _ := failures(ck, name); ch != 0 {
			t.Fatalf("a promoted turn still counted as waitlisted: %d checks", ch)
		}
	})
	t.Run("two unfinished turns with one display code", func(t *testing.T) {
		ck := newChecker()
		s := &state{turns: map[string][]turnView{"run_c": {
			{ID: "turn_1", QueueRunID: "run_c", Number: 1, DisplayCode: "C1", Status: "WAITING"},
			{ID: "turn_2", QueueRunID: "run_c", Number: 1, DisplayCode: "C1", Status: "CALLED"},
			{ID: "turn_3", QueueRunID: "run_c", Number: 3, DisplayCode: "C3", Status: "WAITING"},
		}}, byID: map[string]turnView{}}
		wl.checkState(ck, s)
		if _, f := failures(ck, "display code unique among a run's unfinished turns"); f != 1 {
			t.Fatalf("duplicate code not caught: %d", f)
		}
		if _, f := failures(ck, "numbers drawn by intake are unique per numbering period"); f != 1 {
			t.Fatalf("duplicate number not caught: %d", f)
		}
		if _, f := failures(ck, "numbers drawn by intake are gapless (gaps only for kept numbers)"); f != 1 {
			t.Fatalf("gap not caught: %d", f)
		}
		if _, f := failures(ck, "active turns <= maxTurns (+ turns a reopen brought back)"); f != 1 {
			t.Fatalf("over capacity not caught: %d", f)
		}
	})
	t.Run("a cancelled waiting turn reopened past capacity", func(t *testing.T) {
		// maxTurns 1: turn_1 was cancelled, turn_2 promoted into its room,
		// then turn_1 reopened back to its place (an undo needs no room).
		name := "active turns <= maxTurns (+ turns a reopen brought back)"
		s := &state{turns: map[string][]turnView{"run_c": {
			{ID: "turn_1", QueueRunID: "run_c", Number: 1, DisplayCode: "C1", Status: "WAITING"},
			{ID: "turn_2", QueueRunID: "run_c", Number: 2, DisplayCode: "C2", Status: "WAITING"},
		}}, byID: map[string]turnView{}}
		ck := newChecker()
		wl.checkState(ck, s)
		if _, f := failures(ck, name); f != 1 {
			t.Fatalf("over capacity not caught: %d", f)
		}
		reopen := &workload{w: wl.w, c: &caller{h: &History{}}}
		reopen.c.h.add(fakeOp("reopen", "C", "turn_1", 10, 20, 201, map[string]any{"id": "turn_1", "status": "WAITING"}))
		ck = newChecker()
		reopen.checkState(ck, s)
		if _, f := failures(ck, name); f != 0 {
			t.Fatalf("a reopen back into the line counted against capacity: %d", f)
		}
	})
}

func TestCoverIndex(t *testing.T) {
	w := func(turn string, from, to int) window { return window{turn: turn, from: at(from), to: at(to)} }
	ci := newCoverIndex([]window{w("x", 0, 100), w("x", 5, 200), w("y", 1, 50)})
	op := func(start, end int) *Op { return &Op{Start: at(start), End: at(end)} }
	for _, c := range []struct {
		id         string
		start, end int
		want       string
	}{
		{"x", 30, 40, "y"},  // x's own windows do not count
		{"x", 60, 70, ""},   // y's has ended
		{"y", 60, 70, "x"},  // x's second window reaches furthest
		{"z", 150, 210, ""}, // outlasts every window
		{"z", -5, 10, ""},   // starts before every window
		{"z", 2, 150, ""},   // x's long window starts later
		{"z", 6, 150, "x"},
	} {
		got := ""
		if in := ci.covering(c.id, op(c.start, c.end)); in != nil {
			got = in.turn
		}
		if got != c.want {
			t.Errorf("op on %s %d..%d: covered by %q, want %q", c.id, c.start, c.end, got, c.want)
		}
	}
}
