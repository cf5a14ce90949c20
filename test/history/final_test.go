package history

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"testing"
	"time"
)

// checkAnswers: no 5xx and no transport error, on any request.
func checkAnswers(ck *checker, ops []*Op) {
	for _, o := range ops {
		ck.check("no 5xx answer", o.Err != "" || o.Status < 500, "%s", o)
		ck.check("no transport error", o.Err == "", "%s", o)
	}
}

// checkCreates: every acknowledged create (intake, or a join on A's page)
// is there afterwards, one key gives one turn, and a run holds exactly the
// turns acknowledged creates and forwards explain (so a refused create
// left nothing).
func (wl *workload) checkCreates(ck *checker, ops []*Op, s *state) {
	acked := map[string]map[string]bool{} // run id -> turn ids
	byKey := map[string]string{}
	for _, o := range ops {
		if (o.Kind != "intake" && o.Kind != "join") || o.Status != http.StatusCreated {
			continue
		}
		v := o.TurnView()
		if o.Kind == "join" {
			// The join page answers the turn's id and status; its run is A's.
			j := o.Joined()
			v = turnView{ID: j.TurnID, QueueRunID: wl.w.runs[0].runID, Status: j.Status}
		}
		got, ok := s.byID[v.ID]
		ck.check("acknowledged create is visible afterwards", ok && got.QueueRunID == v.QueueRunID,
			"%s: turn %s is not in its run afterwards", o, v.ID)
		if acked[v.QueueRunID] == nil {
			acked[v.QueueRunID] = map[string]bool{}
		}
		acked[v.QueueRunID][v.ID] = true
		if o.Key != "" {
			first, seen := byKey[o.Key]
			if !seen {
				byKey[o.Key] = v.ID
			}
			ck.check("one idempotency key gives one turn", !seen || first == v.ID,
				"%s: key %s answered turn %s before and %s now", o, o.Key, first, v.ID)
		}
	}
	checkReplays(ck, ops, "intake")
	// Transfers admit a turn in their destination run.
	for _, o := range ops {
		if o.Kind != "transfer" || o.Status != http.StatusCreated {
			continue
		}
		to := o.Transferred().To
		if acked[to.QueueRunID] == nil {
			acked[to.QueueRunID] = map[string]bool{}
		}
		acked[to.QueueRunID][to.ID] = true
	}
	forwarded := map[string]bool{}
	for _, f := range s.forwards {
		if f.Status == "FORWARDED" && f.ToTurnID != nil {
			forwarded[*f.ToTurnID] = true
		}
	}
	for _, r := range wl.w.runs {
		explained := 0
		for _, v := range s.turns[r.runID] {
			ok := acked[r.runID][v.ID] || forwarded[v.ID]
			if ok {
				explained++
			}
			ck.check("every turn of a run comes from an acknowledged create or forward", ok,
				"run %s: turn %s (%s, created %s) matches no 201 create and no forward: a refused create left it",
				r.name, v.ID, v.DisplayCode, v.CreatedAt.Format("15:04:05.000"))
		}
		want := len(acked[r.runID])
		for id := range forwarded {
			if v, ok := s.byID[id]; ok && v.QueueRunID == r.runID {
				want++
			}
		}
		ck.check("turns in a run == distinct acknowledged creates + forwards into it", len(s.turns[r.runID]) == want,
			"run %s: %d turns, %d acknowledged creates and forwards", r.name, len(s.turns[r.runID]), want)
	}
}

// checkLastChanges: the last acknowledged change of a turn, when no other
// change of it overlapped, is what a quiescent read shows afterwards,
// unless a job may have moved the turn since (tolerance expiry of a CALLED
// turn on the grace-0 run, promotion of a WAITLISTED turn with autoPromote).
func (wl *workload) checkLastChanges(ck *checker, byTurn map[string][]*Op, s *state) {
	for id, now := range s.byID {
		var last *Op
		for _, o := range byTurn[id] {
			if o.OK() && o.Method != http.MethodGet && o.Kind != "forward" && !o.Replayed && o.End.Before(s.readAt) &&
				(last == nil || o.Start.After(last.Start)) {
				last = o
			}
		}
		if last == nil {
			continue
		}
		overlapped := false
		for _, o := range byTurn[id] {
			if o != last && o.Method != http.MethodGet && o.End.After(last.Start) && o.End.Before(s.readAt) {
				overlapped = true
			}
		}
		r := wl.w.byRun[now.QueueRunID]
		st := last.TurnView().Status
		if last.Kind == "transfer" {
			st = last.Transferred().From.Status
		}
		if overlapped || r == nil || (r.tolerance && st == "CALLED") || (r.autoPromote && st == "WAITLISTED") {
			continue
		}
		ck.check("the last acknowledged change of a turn is visible afterwards", now.Status == st,
			"%s: answered %s, the turn reads %s afterwards", last, st, now.Status)
	}
}

// checkReentryLimits: a re-entry refused for its limit names the limit a
// read of the queue shows (issue 10: a queue created without tolerance
// reads maxReentries null but enforces 1).
func (wl *workload) checkReentryLimits(ck *checker, ops []*Op) {
	for _, o := range ops {
		if o.Code() != "REENTRY_LIMIT_REACHED" {
			continue
		}
		var e struct {
			Error struct{ Details struct{ MaxReentries int } }
		}
		_ = json.Unmarshal(o.Body, &e)
		var r *runInfo
		for _, x := range wl.w.runs {
			if x.name == o.Run {
				r = x
			}
		}
		ok := r != nil && r.readMaxReentries != nil && *r.readMaxReentries == e.Error.Details.MaxReentries
		read := "null"
		if r != nil && r.readMaxReentries != nil {
			read = fmt.Sprint(*r.readMaxReentries)
		}
		ck.check("a queue read shows the re-entry limit that is enforced", ok,
			"%s: enforced maxReentries %d, the queue reads %s", o, e.Error.Details.MaxReentries, read)
	}
}

// checkReplays: of the 201 answers to one idempotency key, exactly one made
// the resource; every other says it is a replay (Idempotent-Replayed), also
// when the requests raced (docs/turns.md). Bookings are left out: their
// replays carry no header (docs/appointments.md promises none).
func checkReplays(ck *checker, ops []*Op, kind string) {
	type tally struct {
		made, replayed int
		ops            []*Op
	}
	byKey := map[string]*tally{}
	var keys []string
	for _, o := range ops {
		if o.Kind != kind || o.Key == "" || o.Status != http.StatusCreated {
			continue
		}
		tl := byKey[o.Key]
		if tl == nil {
			tl = &tally{}
			byKey[o.Key] = tl
			keys = append(keys, o.Key)
		}
		if o.Replayed {
			tl.replayed++
		} else {
			tl.made++
			tl.ops = append(tl.ops, o)
		}
	}
	for _, k := range keys {
		tl := byKey[k]
		msg := ""
		for _, o := range tl.ops {
			msg += "\n    " + o.String()
		}
		ck.check(kind+": one key, one answer that made it, the others Idempotent-Replayed", tl.made == 1,
			"key %s: %d answers without the replay header, %d with it:%s", k, tl.made, tl.replayed, msg)
	}
}

// checkCalls: no turn was handed to two next (or call) answers: the pairs
// (turn, callCount) of acknowledged calls are unique.
func checkCalls(ck *checker, ops []*Op) map[string]*Op {
	calls := map[string]*Op{}
	for _, o := range ops {
		if (o.Kind != "next" && o.Kind != "call") || o.Status != http.StatusCreated {
			continue
		}
		v := o.TurnView()
		k := fmt.Sprintf("%s#%d", v.ID, v.CallCount)
		prev, dup := calls[k]
		msg := ""
		if dup {
			msg = prev.String()
		}
		ck.check("no turn handed to two next/call answers: (turnId, callCount) unique", !dup,
			"turn %s call %d answered twice:\n    %s\n    %s", v.ID, v.CallCount, msg, o)
		calls[k] = o
	}
	return calls
}

// dispatchKinds are the operations whose acknowledged answer is a change of
// the turn, so its updatedAt is the change's, made during the request.
var dispatchKinds = map[string]bool{"next": true, "call": true, "start": true, "complete": true, "cancel": true,
	"no-show": true, "hold": true, "release": true, "reopen": true}

// clockSlack covers the storage's rounding of timestamps (microseconds in
// PostgreSQL) against the client's nanosecond clock on the same machine.
const clockSlack = 2 * time.Millisecond

// checkUpdatedAt: every dispatch answer shows the turn as committed, so its
// updatedAt falls within the request (issue 10: answers carried the
// previous updatedAt).
func checkUpdatedAt(ck *checker, ops []*Op) {
	for _, o := range ops {
		if o.Status != http.StatusCreated {
			continue
		}
		v := o.TurnView()
		switch {
		case dispatchKinds[o.Kind]:
		case o.Kind == "arrive" && v.ArrivedAt != nil && !v.ArrivedAt.Before(o.Start.Add(-clockSlack)):
			// this arrive set arrivedAt: a change
		default:
			continue
		}
		ok := !v.UpdatedAt.Before(o.Start.Add(-clockSlack)) && !v.UpdatedAt.After(o.End.Add(clockSlack))
		ck.check("dispatch answer shows the committed updatedAt (within the request)", ok,
			"%s %s: updatedAt %s outside the request %s..%s", o.Kind, v.ID, v.UpdatedAt.Format("15:04:05.000000"),
			o.Start.Format("15:04:05.000000"), o.End.Format("15:04:05.000000"))
	}
}

// window is a time a turn was certainly in one status: from the end of an
// acknowledged answer showing it to the start of the first other op on the
// turn that may have committed after that answer (no background job moves
// a turn out of the statuses windows are taken for).
type window struct {
	turn     string
	status   string
	from, to time.Time
}

// covers reports whether op o, on turn id, ran entirely inside the window
// of another turn.
func (w window) covers(id string, o *Op) bool {
	return w.turn != id && !o.Start.Before(w.from) && !o.End.After(w.to)
}

// windowsOf finds the windows of the run's turns in the given statuses.
func windowsOf(ops []*Op, byTurn map[string][]*Op, run string, statuses map[string]bool) []window {
	var out []window
	end := time.Now()
	for _, o := range ops {
		if o.Run != run || o.Status != http.StatusCreated || o.Replayed {
			continue
		}
		v := o.TurnView()
		if v.ID == "" || !statuses[v.Status] {
			continue
		}
		w := window{turn: v.ID, status: v.Status, from: o.End, to: end}
		for _, other := range byTurn[v.ID] {
			if other != o && other.Method != http.MethodGet && other.End.After(o.Start) && other.Start.Before(w.to) {
				w.to = other.Start
			}
		}
		if w.to.After(w.from) {
			out = append(out, w)
		}
	}
	return out
}

// coverIndex finds, in O(log n), a window of a turn other than a given one
// that covers an op: the windows sorted by start and, for each prefix, the
// two windows of different turns that reach furthest. (A long run has
// hundreds of thousands of answers; a scan per op would be quadratic.)
type coverIndex struct {
	ws           []window
	best, second []int // indexes into ws, -1 for none
}

func newCoverIndex(ws []window) *coverIndex {
	ws = slices.Clone(ws)
	sort.Slice(ws, func(i, j int) bool { return ws[i].from.Before(ws[j].from) })
	ci := &coverIndex{ws: ws, best: make([]int, len(ws)), second: make([]int, len(ws))}
	b, sec := -1, -1
	for i := range ws {
		cands := []int{i}
		if b >= 0 {
			cands = append(cands, b)
		}
		if sec >= 0 {
			cands = append(cands, sec)
		}
		sort.SliceStable(cands, func(x, y int) bool { return ws[cands[x]].to.After(ws[cands[y]].to) })
		b, sec = cands[0], -1
		for _, c := range cands[1:] {
			if ws[c].turn != ws[b].turn {
				sec = c
				break
			}
		}
		ci.best[i], ci.second[i] = b, sec
	}
	return ci
}

// covering returns a window of a turn other than id that covers op o, or
// nil.
func (ci *coverIndex) covering(id string, o *Op) *window {
	i := sort.Search(len(ci.ws), func(i int) bool { return ci.ws[i].from.After(o.Start) }) - 1
	if i < 0 {
		return nil
	}
	for _, j := range []int{ci.best[i], ci.second[i]} {
		if j >= 0 && ci.ws[j].covers(id, o) {
			return &ci.ws[j]
		}
	}
	return nil
}

// checkWaitlistOrder: no later arrival overtakes the waitlist (issue 10,
// item 3). A WAITLISTED turn stays WAITLISTED until an op on it (release,
// cancel) moves it, or, with autoPromote, until a promotion, which only
// follows another change of the run; so an intake acknowledged entirely
// inside such a window must be WAITLISTED too.
func (wl *workload) checkWaitlistOrder(ck *checker, ops []*Op, byTurn map[string][]*Op) {
	for _, r := range wl.w.runs {
		if !r.waitlist {
			continue
		}
		windows := windowsOf(ops, byTurn, r.name, map[string]bool{"WAITLISTED": true})
		if r.autoPromote {
			windows = cutAtPromotions(windows, ops, r.name)
		}
		name := "no later arrival overtakes a WAITLISTED turn (autoPromote off)"
		if r.autoPromote {
			name = "no later arrival overtakes a WAITLISTED turn (autoPromote on)"
		}
		index := newCoverIndex(windows)
		for _, o := range ops {
			if o.Kind != "intake" || o.Run != r.name || o.Status != http.StatusCreated || o.Replayed {
				continue
			}
			v := o.TurnView()
			if w := index.covering(v.ID, o); w != nil {
				ck.check(name, v.Status == "WAITLISTED",
					"run %s: intake %s answered %s (%s..%s) while %s was WAITLISTED (from %s, nothing could move it until %s)",
					r.name, v.ID, v.Status, o.Start.Format("15:04:05.000"), o.End.Format("15:04:05.000"),
					w.turn, w.from.Format("15:04:05.000"), w.to.Format("15:04:05.000"))
			}
		}
	}
}

// cutAtPromotions ends each window where any change of the run other than
// an intake may have committed: with autoPromote, it may have promoted the
// waitlisted turn.
func cutAtPromotions(windows []window, ops []*Op, run string) []window {
	var changes []*Op // by start (ops come sorted so)
	var longest time.Duration
	for _, o := range ops {
		if o.Run == run && o.Method != http.MethodGet && o.Kind != "intake" && o.Kind != "forward" {
			changes = append(changes, o)
			longest = max(longest, o.End.Sub(o.Start))
		}
	}
	var out []window
	for _, w := range windows {
		// The first change by start that may commit inside the window:
		// it started before the window's end and ended after its start.
		i := sort.Search(len(changes), func(i int) bool { return !changes[i].Start.Before(w.from.Add(-longest)) })
		for ; i < len(changes) && changes[i].Start.Before(w.to); i++ {
			if changes[i].End.After(w.from) {
				w.to = changes[i].Start
				break
			}
		}
		if w.to.After(w.from) {
			out = append(out, w)
		}
	}
	return out
}

// checkCodeInUse: with carpool.oneActiveTurnPerCode, while a turn of an
// access code is certainly unfinished (WAITLISTED, WAITING or HELD: no job
// moves those in run C), no acknowledged answer shows another turn of that
// code unfinished: not an intake, nor a re-entry (arrive) or a reopen
// (issue 10, item 3).
func (wl *workload) checkCodeInUse(ck *checker, ops []*Op, byTurn map[string][]*Op) {
	codeOf := wl.accessCodes()
	for _, r := range wl.w.runs {
		if !r.oneTurnPerCode {
			continue
		}
		windows := windowsOf(ops, byTurn, r.name, map[string]bool{"WAITLISTED": true, "WAITING": true, "HELD": true})
		windowsByCode := map[string][]window{}
		for _, w := range windows {
			if c := codeOf[w.turn]; c != "" {
				windowsByCode[c] = append(windowsByCode[c], w)
			}
		}
		byCode := map[string]*coverIndex{}
		for c, ws := range windowsByCode {
			byCode[c] = newCoverIndex(ws)
		}
		for _, o := range ops {
			if o.Run != r.name || o.Status != http.StatusCreated || o.Method == http.MethodGet {
				continue
			}
			v := o.TurnView()
			c := codeOf[v.ID]
			if c == "" || !unfinished[v.Status] {
				continue
			}
			var in *window
			if index := byCode[c]; index != nil {
				in = index.covering(v.ID, o)
			}
			if in == nil {
				ck.check("oneActiveTurnPerCode: no second unfinished turn of a code (intake, re-entry, reopen)", true, "")
				continue
			}
			ck.check("oneActiveTurnPerCode: no second unfinished turn of a code (intake, re-entry, reopen)", false,
				"run %s: %s %s answered %s (%s..%s) with access code %s while %s of the same code was %s (%s..%s)",
				r.name, o.Kind, v.ID, v.Status, o.Start.Format("15:04:05.000"), o.End.Format("15:04:05.000"),
				c, in.turn, in.status, in.from.Format("15:04:05.000"), in.to.Format("15:04:05.000"))
		}
	}
}

// streamCursor starts reading the event log at the moment of the call.
func (wl *workload) streamCursor(t *testing.T) string {
	o := wl.c.do(req{client: -1, kind: "events", method: http.MethodGet, path: "/events/stream"})
	var p struct{ Cursor string }
	if o.Status != http.StatusOK || json.Unmarshal(o.Body, &p) != nil || p.Cursor == "" {
		t.Fatalf("events: %s", o)
	}
	return p.Cursor
}

type event struct {
	ID    string
	Event string
	Data  map[string]any
}

// readEvents reads the log from the cursor until it has nothing more, then
// once again a moment later (events of transactions still running are
// held back by the stream's horizon).
func (wl *workload) readEvents(t *testing.T, cursor string) []event {
	var out []event
	empty := 0
	for empty < 2 {
		o := wl.c.do(req{client: -1, kind: "events", method: http.MethodGet,
			path: "/events/stream?limit=200&cursor=" + url.QueryEscape(cursor)})
		var p struct {
			Data    []event
			Cursor  string
			HasMore bool
			Gap     bool
		}
		if o.Status != http.StatusOK || json.Unmarshal(o.Body, &p) != nil {
			t.Fatalf("events: %s", o)
		}
		if p.Gap {
			t.Fatalf("events: the stream reports a gap: %s", o)
		}
		out = append(out, p.Data...)
		cursor = p.Cursor
		if len(p.Data) == 0 && !p.HasMore {
			empty++
			time.Sleep(500 * time.Millisecond)
		}
	}
	return out
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// checkEvents: one event per acknowledged change, none for a refused one.
func (wl *workload) checkEvents(ck *checker, ops []*Op, s *state, calls map[string]*Op, events []event) {
	created := map[string]int{}
	called := map[string]int{}
	completed := map[string]int{}
	reopened := map[string]int{}
	staffCancel := map[string]int{}
	expiryCancel := map[string]int{}
	scheduled := map[string]int{}
	breached := map[string]int{}
	customerCancel := map[string]int{}
	transferCancel := map[string]int{}
	for _, e := range events {
		id := str(e.Data, "turnId")
		switch e.Event {
		case "turn.created":
			created[id]++
		case "turn.called":
			n, _ := e.Data["callCount"].(float64)
			called[fmt.Sprintf("%s#%d", id, int(n))]++
		case "turn.completed":
			completed[id]++
		case "turn.reopened":
			reopened[id]++
		case "turn.cancelled":
			switch str(e.Data, "reason") {
			case "tolerance_expired":
				expiryCancel[id]++
			case "customer":
				customerCancel[id]++
			case "transferred":
				transferCancel[id]++
			default:
				staffCancel[id]++
			}
		case "appointment.scheduled":
			scheduled[str(e.Data, "appointmentId")]++
		case "turn.sla_breached":
			breached[id]++
		}
	}
	// A's sla.maxWaitMinutes is 0: its SLA jobs run at once, and the turn
	// mark (turn_marks) makes a job run twice raise nothing more.
	for id, n := range breached {
		v, ok := s.byID[id]
		ck.check("turn.sla_breached at most once per turn, only on the run with an SLA",
			n == 1 && ok && v.QueueRunID == wl.w.runs[0].runID,
			"turn %s (run %s): %d turn.sla_breached events", id, v.QueueRunID, n)
	}
	ck.check("turn.sla_breached raised (A's SLA jobs ran)", len(breached) > 0 || len(s.turns[wl.w.runs[0].runID]) == 0,
		"no turn.sla_breached for %d turns of A", len(s.turns[wl.w.runs[0].runID]))
	for id, v := range s.byID {
		ck.check("turn.created once per turn", created[id] == 1, "turn %s (%s, run %s): %d turn.created events", id, v.DisplayCode, v.QueueRunID, created[id])
	}
	for id, n := range created {
		_, ok := s.byID[id]
		ck.check("no turn.created for a turn that does not exist (refused create)", ok, "turn.created ×%d for unknown turn %s", n, id)
	}
	for k, o := range calls {
		ck.check("turn.called once per acknowledged (turnId, callCount)", called[k] == 1, "%s: %d turn.called events for %s", o, called[k], k)
	}
	for k, n := range called {
		_, ok := calls[k]
		ck.check("no turn.called without an acknowledged next/call", ok, "%d turn.called events for %s, which no 201 next/call answered", n, k)
	}
	acks := func(kind string) map[string]int {
		m := map[string]int{}
		for _, o := range ops {
			if o.Kind == kind && o.Status == http.StatusCreated {
				m[o.Turn]++
			}
		}
		return m
	}
	compare := func(name string, want, got map[string]int) {
		for id := range union(want, got) {
			ck.check(name, want[id] == got[id], "turn %s: %d acknowledged, %d events", id, want[id], got[id])
		}
	}
	compare("turn.completed per turn == acknowledged completes", acks("complete"), completed)
	compare("turn.reopened per turn == acknowledged reopens", acks("reopen"), reopened)
	compare("turn.cancelled (staff) per turn == acknowledged cancels", acks("cancel"), staffCancel)
	left := map[string]int{}
	for _, o := range ops {
		if o.Kind == "leave" && o.Status == http.StatusOK {
			left[o.Turn]++
		}
	}
	compare("turn.cancelled (customer) per turn == acknowledged leaves", left, customerCancel)
	compare("turn.cancelled (transferred) per turn == acknowledged transfers", acks("transfer"), transferCancel)
	callsOf := map[string]int{}
	for _, o := range calls {
		callsOf[o.TurnView().ID]++
	}
	for id, n := range expiryCancel {
		v := s.byID[id]
		r := wl.w.byRun[v.QueueRunID]
		ok := r != nil && r.tolerance && n <= callsOf[id]
		ck.check("turn.cancelled (tolerance_expired) only on the grace-0 run, at most once per call", ok,
			"turn %s: %d expiry cancels, %d calls", id, n, callsOf[id])
	}
	booked := map[string]int{}
	for _, o := range ops {
		if o.Kind == "book" && o.Status == http.StatusCreated && !o.Replayed {
			var a struct{ ID string }
			_ = json.Unmarshal(o.Body, &a)
			booked[a.ID] = 1 // concurrent sends of one key may both answer without the replay header
		}
	}
	compare("appointment.scheduled once per booked appointment", booked, scheduled)
}

func union(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// checkSlots: every acknowledged booking is there, nothing else is, and no
// slot holds more active appointments than its capacity.
func (wl *workload) checkSlots(t *testing.T, ck *checker, ops []*Op) {
	d := wl.w.appt
	acked := map[string]bool{}
	for _, o := range ops {
		if o.Kind == "book" && o.Status == http.StatusCreated {
			var a struct{ ID string }
			_ = json.Unmarshal(o.Body, &a)
			acked[a.ID] = true
		}
	}
	activeIn := map[string]int{}
	listed := map[string]bool{}
	for _, raw := range wl.list(t, 0, "/queue-runs/"+d.runID+"/appointments") {
		var a struct{ ID, SlotID, Status string }
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		listed[a.ID] = true
		ck.check("every appointment comes from an acknowledged booking", acked[a.ID], "appointment %s matches no 201 booking", a.ID)
		if a.Status != "CANCELLED" {
			activeIn[a.SlotID]++
		}
	}
	for id := range acked {
		ck.check("acknowledged booking is visible afterwards", listed[id], "appointment %s answered 201 is not listed", id)
	}
	for _, raw := range wl.list(t, 0, "/queue-runs/"+d.runID+"/slots") {
		var sl struct {
			ID                  string
			Capacity, Remaining int
		}
		if err := json.Unmarshal(raw, &sl); err != nil {
			t.Fatal(err)
		}
		ck.check("a booked slot is never over capacity", activeIn[sl.ID] <= sl.Capacity,
			"slot %s: %d active appointments, capacity %d", sl.ID, activeIn[sl.ID], sl.Capacity)
		ck.check("slot remaining == capacity - active appointments", sl.Remaining == sl.Capacity-activeIn[sl.ID],
			"slot %s: remaining %d, capacity %d, %d active", sl.ID, sl.Remaining, sl.Capacity, activeIn[sl.ID])
	}
}
