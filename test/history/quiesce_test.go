package history

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// unfinished are the statuses of a turn still in play: its display code is
// taken.
var unfinished = map[string]bool{"WAITLISTED": true, "WAITING": true, "HELD": true, "CALLED": true, "IN_SERVICE": true}

// active are the statuses that count against capacity.maxTurns.
var active = map[string]bool{"WAITING": true, "HELD": true, "CALLED": true, "IN_SERVICE": true}

type forwardView struct {
	ID           string
	LinkID       string
	FromTurnID   string
	Status       string
	ToTurnID     *string
	ToQueueRunID *string
}

// state is a quiescent snapshot: every turn of every run, every forward.
type state struct {
	turns    map[string][]turnView // run id -> turns, by creation
	byID     map[string]turnView
	forwards []forwardView
	readAt   time.Time // when the reading began: every client op ended before
}

// list reads every page of a list endpoint from process proc.
func (wl *workload) list(t *testing.T, proc int, path string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	cursor := ""
	for {
		p := path + "?limit=200"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		o := wl.c.do(req{client: -1, proc: proc, kind: "list", method: http.MethodGet, path: p})
		if o.Status != http.StatusOK {
			t.Fatalf("list: %s", o)
		}
		var page struct {
			Data       []json.RawMessage
			Pagination struct{ NextCursor *string }
		}
		if err := json.Unmarshal(o.Body, &page); err != nil {
			t.Fatalf("list %s: %v", p, err)
		}
		out = append(out, page.Data...)
		if page.Pagination.NextCursor == nil || *page.Pagination.NextCursor == "" {
			return out
		}
		cursor = *page.Pagination.NextCursor
	}
}

func (wl *workload) readState(t *testing.T) *state {
	s := &state{turns: map[string][]turnView{}, byID: map[string]turnView{}, readAt: time.Now()}
	for _, r := range wl.w.runs {
		for _, raw := range wl.list(t, 0, "/queue-runs/"+r.runID+"/turns") {
			var v turnView
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			s.turns[r.runID] = append(s.turns[r.runID], v)
			s.byID[v.ID] = v
			wl.reg.addTurn(r.runID, v.ID, v.Status)
		}
	}
	for _, link := range []string{wl.w.linkAB, wl.w.linkBC} {
		for _, raw := range wl.list(t, 0, "/queue-links/"+link+"/forwards") {
			var f forwardView
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatal(err)
			}
			s.forwards = append(s.forwards, f)
		}
	}
	return s
}

// finalDrain bounds the sequential next calls of the last quiescent point
// per run: the memory backend builds lines of thousands, and the order is
// as well shown by the first few hundred.
const finalDrain = 300

// settleTime lets jobs (tolerance expiry at grace 0, forwards) run after a
// burst.
const settleTime = 1500 * time.Millisecond

// quiesce runs between bursts, with the clients stopped: every run is
// opened again, jobs settle, and the state invariants are checked on a
// snapshot; then the positions of the waiting turns are read on every
// process and some (up to finalDrain at the end) are drained by sequential
// next calls.
func (wl *workload) quiesce(t *testing.T, ck *checker, final bool) *state {
	for _, r := range append(append([]*runInfo(nil), wl.w.runs...), wl.w.appt) {
		for _, kind := range []string{"open", "open-intake"} {
			o := wl.c.do(req{client: -1, kind: "run-" + kind, run: r.name, method: http.MethodPost,
				path: "/queue-runs/" + r.runID + "/" + kind})
			ck.check("quiescent: runs reopen between bursts", o.OK(), "%s", o)
		}
	}
	time.Sleep(settleTime)
	deadline := time.Now().Add(20 * time.Second)
	var s *state
	for {
		s = wl.readState(t)
		pending := 0
		for _, f := range s.forwards {
			if f.Status == "PENDING" {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			ck.check("quiescent: forwards settle within 20 s", pending == 0, "%d forwards still PENDING", pending)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	wl.checkState(ck, s)
	wl.checkReturnedCalls(ck, s)
	for _, r := range wl.w.runs {
		drain := 4
		if final {
			drain = finalDrain
		}
		wl.checkPositions(ck, r, s, drain)
	}
	wl.probeClosedRun(t, ck)
	return s
}

// probeClosedRun: nothing enters the line of a closed run automatically
// (issue 10, item 3). On the run with autoPromote, when it has waitlisted
// and active turns: close it, cancel an active turn (which frees a place),
// and the waitlisted turns must all still be WAITLISTED; then open it again.
func (wl *workload) probeClosedRun(t *testing.T, ck *checker) {
	for _, r := range wl.w.runs {
		if !r.autoPromote {
			continue
		}
		var waitlisted []string
		victim := ""
		for _, raw := range wl.list(t, 0, "/queue-runs/"+r.runID+"/turns") {
			var v turnView
			_ = json.Unmarshal(raw, &v)
			switch {
			case v.Status == "WAITLISTED":
				waitlisted = append(waitlisted, v.ID)
			case active[v.Status] && victim == "":
				victim = v.ID
			}
		}
		if len(waitlisted) == 0 || victim == "" {
			continue
		}
		run := func(kind string) {
			o := wl.c.do(req{client: -1, kind: "run-" + kind, run: r.name, method: http.MethodPost, path: "/queue-runs/" + r.runID + "/" + kind})
			ck.check("quiescent: runs reopen between bursts", o.OK(), "%s", o)
		}
		run("close")
		o := wl.c.do(req{client: -1, kind: "cancel", run: r.name, turn: victim, method: http.MethodPost, path: "/turns/" + victim + "/cancel"})
		ck.check("cancel of an active turn in a closed run is accepted", o.Status == http.StatusCreated, "%s", o)
		now := map[string]string{}
		for _, raw := range wl.list(t, 1, "/queue-runs/"+r.runID+"/turns") {
			var v turnView
			_ = json.Unmarshal(raw, &v)
			now[v.ID] = v.Status
		}
		for _, id := range waitlisted {
			ck.check("closed run: no WAITLISTED turn promoted automatically", now[id] == "WAITLISTED",
				"run %s closed, %s cancelled (%s): waitlisted turn %s is now %s", r.name, victim, o.End.Format("15:04:05.000"), id, now[id])
		}
		run("open")
	}
}

// checkState checks the invariants a snapshot shows on its own.
func (wl *workload) checkState(ck *checker, s *state) {
	reopened := wl.reopenedActive()
	kept := keptNumbers(s)
	if wl.reg != nil { // the self-checks' workloads run no clients
		wl.reg.mu.Lock()
		for id := range wl.reg.transferKept {
			kept[id] = true
		}
		wl.reg.mu.Unlock()
	}
	codeOf := wl.accessCodes()
	for _, r := range wl.w.runs {
		turns := s.turns[r.runID]
		// One turn per station.
		atStation := map[string][]string{}
		for _, v := range turns {
			if (v.Status == "CALLED" || v.Status == "IN_SERVICE") && v.StationID != nil {
				atStation[*v.StationID] = append(atStation[*v.StationID], v.ID+" "+v.Status)
			}
		}
		for _, st := range r.stations {
			ck.check("station holds at most one CALLED/IN_SERVICE turn", len(atStation[st]) <= 1,
				"run %s station %s holds %v", r.name, st, atStation[st])
		}
		// Display codes unique among unfinished turns.
		codes := map[string][]string{}
		for _, v := range turns {
			if unfinished[v.Status] {
				holder := v.ID + " " + v.Status
				if kept[v.ID] {
					holder += " (keepNumber forward)"
				}
				codes[v.DisplayCode] = append(codes[v.DisplayCode], holder)
			}
		}
		for code, ids := range codes {
			ck.check("display code unique among a run's unfinished turns", len(ids) == 1,
				"run %s: code %s held by %v", r.name, code, ids)
		}
		// carpool.oneActiveTurnPerCode (run C): one unfinished turn per
		// access code, also after re-entry and reopen.
		if r.oneTurnPerCode {
			perCode := map[string][]string{}
			for _, v := range turns {
				if c := codeOf[v.ID]; c != "" && unfinished[v.Status] {
					perCode[c] = append(perCode[c], v.ID+" "+v.Status)
				}
			}
			for _, c := range wl.w.codes {
				ck.check("oneActiveTurnPerCode: at most one unfinished turn per access code", len(perCode[c]) <= 1,
					"run %s: access code %s has unfinished turns %v", r.name, c, perCode[c])
			}
		}
		// Numbers drawn by intake are 1..N; a gap is explained only by a
		// number kept by a keepNumber forward.
		drawn := map[int][]string{}
		keptHere := map[int]bool{}
		maxDrawn := 0
		for _, v := range turns {
			if kept[v.ID] {
				keptHere[v.Number] = true
				continue
			}
			drawn[v.Number] = append(drawn[v.Number], v.ID)
			maxDrawn = max(maxDrawn, v.Number)
		}
		for n := 1; n <= maxDrawn; n++ {
			ids := drawn[n]
			ck.check("numbers drawn by intake are gapless (gaps only for kept numbers)", len(ids) > 0 || keptHere[n],
				"run %s: number %d was never drawn (highest %d) and no kept turn holds it", r.name, n, maxDrawn)
			ck.check("numbers drawn by intake are unique per numbering period", len(ids) <= 1,
				"run %s: number %d drawn by %v", r.name, n, ids)
		}
		if r.maxTurns == 0 {
			continue
		}
		// Capacity: active turns never exceed maxTurns, except turns an undo
		// brought back: a reopen needs no room (docs/turns.md), whether it
		// returns a COMPLETED or NO_SHOW turn to service or a CANCELLED one
		// to its place in the line (WAITING, HELD).
		act, allowance := 0, 0
		var waitlisted []string
		for _, v := range turns {
			if active[v.Status] {
				act++
				if reopened[v.ID] {
					allowance++
				}
			}
			if v.Status == "WAITLISTED" {
				waitlisted = append(waitlisted, v.ID)
			}
		}
		ck.check("active turns <= maxTurns (+ turns a reopen brought back)", act <= r.maxTurns+allowance,
			"run %s: %d active turns, maxTurns %d, %d of them reopened", r.name, act, r.maxTurns, allowance)
		if r.autoPromote {
			ck.check("autoPromote: nobody WAITLISTED while there is room (open run)", len(waitlisted) == 0 || act >= r.maxTurns,
				"run %s: %d active of maxTurns %d while %v wait on the waitlist", r.name, act, r.maxTurns, waitlisted)
		}
	}
}

// accessCodes maps the turns acknowledged creates made with an access
// code to that code.
func (wl *workload) accessCodes() map[string]string {
	out := map[string]string{}
	for _, o := range wl.c.h.Ops() {
		if o.Kind != "intake" || o.Status != http.StatusCreated {
			continue
		}
		var body struct{ AccessCode string }
		if json.Unmarshal(o.Req, &body) == nil && body.AccessCode != "" {
			out[o.TurnView().ID] = body.AccessCode
		}
	}
	return out
}

// keptNumbers are the turns a keepNumber forward made with the source's
// number and display code.
func keptNumbers(s *state) map[string]bool {
	kept := map[string]bool{}
	for _, f := range s.forwards {
		if f.Status != "FORWARDED" || f.ToTurnID == nil {
			continue
		}
		src, okS := s.byID[f.FromTurnID]
		dst, okD := s.byID[*f.ToTurnID]
		if okS && okD && src.Number == dst.Number && src.DisplayCode == dst.DisplayCode {
			kept[dst.ID] = true
		}
	}
	return kept
}

// reopenedActive are the turns some acknowledged reopen brought back to
// an active status: an undo, which may exceed capacity (a reopen to
// WAITLISTED waits for room like any waitlisted turn).
func (wl *workload) reopenedActive() map[string]bool {
	out := map[string]bool{}
	for _, o := range wl.c.h.Ops() {
		if o.Kind == "reopen" && o.OK() && active[o.TurnView().Status] {
			out[o.Turn] = true
		}
	}
	return out
}

// checkReturnedCalls: a called turn that one client held and released,
// with no other acknowledged change of it since the call, is ahead of every
// other WAITING turn of its priority that only ever joined the line
// (docs/turns.md, "Held turns keep their place"; issue 10, item 3). Turns
// that some op moved are left out of the comparison: the rule does not fix
// their order against a returned call.
func (wl *workload) checkReturnedCalls(ck *checker, s *state) {
	byTurn := opsByTurn(wl.c.h.Ops())
	wl.reg.mu.Lock()
	returned := append([]returnedCall(nil), wl.reg.returned...)
	wl.reg.mu.Unlock()
	valid := map[string]returnedCall{}
	for _, rc := range returned {
		clean := true
		for _, o := range byTurn[rc.turn] {
			if o == rc.ops[0] || o == rc.ops[1] || o == rc.ops[2] || !o.OK() || o.Method == http.MethodGet || o.Kind == "forward" {
				continue
			}
			if o.End.After(rc.start) {
				clean = false // touched during the sequence or after it
				break
			}
		}
		if v, ok := s.byID[rc.turn]; ok && clean && v.Status == "WAITING" {
			valid[rc.turn] = rc
		}
	}
	// plain are turns that only ever joined the line: no op moved them
	// (hold, release, reopen, priority, re-entry), so their place is their
	// arrival and a returned call goes before them.
	plain := func(id string) bool {
		for _, o := range byTurn[id] {
			if o.OK() && o.Method != http.MethodGet && o.Kind != "intake" && o.Kind != "assign-station" && o.Kind != "arrive" {
				return false
			}
		}
		return true
	}
	plainCache := map[string]bool{}
	isPlain := func(id string) bool {
		p, ok := plainCache[id]
		if !ok {
			p = plain(id)
			plainCache[id] = p
		}
		return p
	}
	for id, rc := range valid {
		v := s.byID[id]
		var ahead []string
		for _, other := range s.turns[v.QueueRunID] {
			if other.Status != "WAITING" || other.Priority != v.Priority || other.ID == id || !isPlain(other.ID) {
				continue
			}
			if v.Position == nil || other.Position == nil || *other.Position < *v.Position {
				ahead = append(ahead, fmt.Sprintf("%s (%s) at %s", other.ID, other.DisplayCode, ptr(other.Position)))
			}
		}
		if len(ahead) > 3 {
			ahead = append(ahead[:3], fmt.Sprintf("and %d more", len(ahead)-3))
		}
		ck.check("a called turn held and released is next at its priority", len(ahead) == 0,
			"turn %s (%s, %s; call %s, hold, release done %s) at position %s; ahead of it: %v",
			id, v.DisplayCode, v.Priority, rc.ops[0].Start.Format("15:04:05.000"), rc.ops[2].End.Format("15:04:05.000"),
			ptr(v.Position), ahead)
	}
}

// opsByTurn indexes the ops by the turn they target.
func opsByTurn(ops []*Op) map[string][]*Op {
	out := map[string][]*Op{}
	for _, o := range ops {
		if o.Turn != "" {
			out[o.Turn] = append(out[o.Turn], o)
		}
	}
	return out
}

func ptr(p *int) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// checkPositions reads every WAITING turn of the run on every process:
// the positions are exactly 1..n and the same everywhere; then drain
// sequential next calls take them in that order (and when that drains the
// line, next then finds nobody).
func (wl *workload) checkPositions(ck *checker, r *runInfo, s *state, drain int) {
	var waiting []string
	for _, v := range s.turns[r.runID] {
		if v.Status == "WAITING" {
			waiting = append(waiting, v.ID)
		}
	}
	order := make([]string, len(waiting)+1) // order[position] = turn id
	for p := range wl.procs {
		seen := map[int]string{}
		for _, id := range waiting {
			o := wl.c.do(req{client: -1, proc: p, kind: "get", run: r.name, turn: id, method: http.MethodGet, path: "/turns/" + id})
			v := o.TurnView()
			if !ck.check("quiescent: a WAITING turn reads WAITING with a position", o.Status == http.StatusOK && v.Status == "WAITING" && v.Position != nil,
				"run %s turn %s on process %d: %s", r.name, id, p, o) {
				continue
			}
			pos := *v.Position
			ok := pos >= 1 && pos <= len(waiting) && seen[pos] == ""
			ck.check("positions of WAITING turns are exactly 1..n", ok,
				"run %s process %d: turn %s at position %d (n=%d, also held by %q)", r.name, p, id, pos, len(waiting), seen[pos])
			if !ok {
				continue
			}
			seen[pos] = id
			if p == 0 {
				order[pos] = id
			} else {
				ck.check("positions identical on every process", order[pos] == id,
					"run %s: position %d is %s on process 0 and %s on process %d", r.name, pos, order[pos], id, p)
			}
		}
	}
	n := min(len(waiting), drain)
	for i := 1; i <= n; i++ {
		o := wl.c.do(req{client: -1, proc: i, kind: "next", run: r.name, method: http.MethodPost,
			path: "/queue-runs/" + r.runID + "/dispatch/next"})
		got := o.TurnView().ID
		if !ck.check("sequential next takes the WAITING turns in position order", o.Status == http.StatusCreated && got == order[i],
			"run %s drain %d: want the turn at position %d, %s; got %s", r.name, i, i, order[i], o) {
			break
		}
	}
	if drain >= len(waiting) && len(waiting) > 0 {
		o := wl.c.do(req{client: -1, kind: "next", run: r.name, method: http.MethodPost, path: "/queue-runs/" + r.runID + "/dispatch/next"})
		ck.check("sequential next takes the WAITING turns in position order", o.Status == http.StatusConflict && o.Code() == "NO_WAITING_TURNS",
			"run %s: after draining %d turns, next answered %s", r.name, len(waiting), o)
	}
}
