package history

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// runInfo is one queue and its run, with the settings the checks need.
type runInfo struct {
	name        string // A, B, C (turns) or D (appointments)
	queueID     string
	runID       string
	stations    []string
	maxTurns    int // 0: no capacity limit
	waitlist    bool
	autoPromote bool
	tolerance   bool // graceMinutes 0: every call expires at once
	// oneTurnPerCode is carpool.oneActiveTurnPerCode.
	oneTurnPerCode bool
	// readMaxReentries is tolerance.maxReentries as a read of the queue
	// shows it (null for a queue created without tolerance, today).
	readMaxReentries *int
	slots            []slotInfo
}

type slotInfo struct {
	ID       string
	Capacity int
}

// world is the account's setup: the queues every client works on.
type world struct {
	runs   []*runInfo // the turn runs, A B C
	byRun  map[string]*runInfo
	appt   *runInfo
	linkAB string   // A -> B on completion, keepNumber
	linkBC string   // B -> C by hand, a new number
	codes  []string // access codes of C, which allows one active turn per code
	// joinA is the token of a kiosk join link of A: customers join A on
	// its page too.
	joinA string
}

// helpReplies are A's help.quickReplies: staff answer help requests with
// one of them.
var helpReplies = []string{"Coming to you", "Please wait at desk 1"}

// setup creates, through the API, the queues of the workload:
//
//   - A: no capacity, three stations, service tracked, reopen allowed;
//     prefix T, like B, so keepNumber forwards from A meet B's own codes;
//     help on (customers ask on their ticket page, staff answer); a kiosk
//     join link; sla.maxWaitMinutes 0, so every turn's SLA job runs at once
//     and marks the turn while it most likely still waits; transfers to C.
//   - B: maxTurns 6 with a waitlist and autoPromote, complete from CALLED
//     (trackService off), reopen allowed, prefix T.
//   - C: maxTurns 5 with a waitlist and autoPromote off (staff promote by
//     release), tolerance graceMinutes 0 with onToleranceExpired cancel, so
//     calls expire at once and the expiry is told apart by its reason;
//     carpool.oneActiveTurnPerCode, with four access codes some intakes use.
//   - D: an APPOINTMENT queue with 3-seat slots tomorrow.
//
// Links: A -> B on completion with keepNumber; B -> C manual.
func setup(t *testing.T, c *caller) *world {
	must := func(o *Op, out any) {
		t.Helper()
		if o.Status != http.StatusCreated && o.Status != http.StatusOK {
			t.Fatalf("setup: %s", o)
		}
		if out != nil {
			if err := json.Unmarshal(o.Body, out); err != nil {
				t.Fatalf("setup: decode %s: %v", o.Body, err)
			}
		}
	}
	post := func(path string, body any, out any) {
		t.Helper()
		must(c.do(req{client: -1, kind: "setup", method: http.MethodPost, path: path, body: body}), out)
	}
	var ent struct{ ID string }
	post("/entities", map[string]any{"name": "History branch"}, &ent)
	mk := func(name string, body map[string]any) *runInfo {
		t.Helper()
		body["entityId"], body["name"] = ent.ID, "History "+name
		if _, ok := body["type"]; !ok {
			body["type"] = "TURN"
		}
		var q struct {
			ID       string
			Stations []struct{ ID string }
			Runs     []struct{ ID string }
		}
		post("/queues", body, &q)
		r := &runInfo{name: name, queueID: q.ID, runID: q.Runs[0].ID}
		var read struct{ Tolerance struct{ MaxReentries *int } }
		must(c.do(req{client: -1, kind: "setup", method: http.MethodGet, path: "/queues/" + q.ID}), &read)
		r.readMaxReentries = read.Tolerance.MaxReentries
		for _, s := range q.Stations {
			r.stations = append(r.stations, s.ID)
		}
		return r
	}
	stations := func(n int) []any {
		var out []any
		for i := range n {
			out = append(out, map[string]any{"label": fmt.Sprintf("Desk %d", i+1)})
		}
		return out
	}
	a := mk("A", map[string]any{"turnPrefix": "T", "turnPadding": 3, "stations": stations(3),
		"dispatchFlow":    map[string]any{"allowReopen": true},
		"help":            map[string]any{"enabled": true, "quickReplies": helpReplies},
		"sla":             map[string]any{"maxWaitMinutes": 0},
		"transferEnabled": true})
	b := mk("B", map[string]any{"turnPrefix": "T", "turnPadding": 3, "stations": stations(2),
		"capacity":     map[string]any{"maxTurns": 6, "waitlistEnabled": true, "autoPromote": true},
		"dispatchFlow": map[string]any{"allowReopen": true, "trackService": false}})
	b.maxTurns, b.waitlist, b.autoPromote = 6, true, true
	cq := mk("C", map[string]any{"turnPrefix": "C", "stations": stations(2),
		"capacity":     map[string]any{"maxTurns": 5, "waitlistEnabled": true, "autoPromote": false},
		"tolerance":    map[string]any{"graceMinutes": 0, "allowReentry": true, "maxReentries": 3},
		"dispatchFlow": map[string]any{"allowReopen": true, "onToleranceExpired": "cancel"},
		"carpool":      map[string]any{"enabled": true, "oneActiveTurnPerCode": true}})
	cq.maxTurns, cq.waitlist, cq.tolerance, cq.oneTurnPerCode = 5, true, true, true
	d := mk("D", map[string]any{"type": "APPOINTMENT"})
	// Reminders two days ahead: every booking's reminder (slots are
	// tomorrow) is due at once, checked by checkReminders.
	must(c.do(req{client: -1, kind: "setup", method: http.MethodPut, path: "/queues/" + d.queueID + "/notifications",
		body: map[string]any{"moments": []string{"appointment_reminder"}, "reminderMinutes": 2880}}), nil)

	// Tomorrow in UTC (the queue has no time zone), so no slot has started.
	day := time.Now().UTC().Add(24 * time.Hour).Format("2006-01-02")
	var batch struct {
		Slots []struct {
			ID       string
			Capacity int
		}
	}
	post("/queue-runs/"+d.runID+"/slots", map[string]any{"date": day, "startTime": "09:00", "endTime": "12:00",
		"slotMinutes": 30, "capacity": 3}, &batch)
	for _, s := range batch.Slots {
		d.slots = append(d.slots, slotInfo(s))
	}
	if len(d.slots) == 0 {
		t.Fatal("setup: no slot generated")
	}
	w := &world{runs: []*runInfo{a, b, cq}, appt: d, byRun: map[string]*runInfo{}}
	for _, r := range w.runs {
		w.byRun[r.runID] = r
	}
	for i := range 4 {
		code := fmt.Sprintf("CAR%d", i+1)
		post("/access-codes", map[string]any{"code": code, "scopeType": "queue", "scopeId": cq.queueID}, nil)
		w.codes = append(w.codes, code)
	}
	var l struct{ ID string }
	post("/queue-links", map[string]any{"fromQueueDefinitionId": a.queueID, "toQueueDefinitionId": b.queueID, "keepNumber": true}, &l)
	w.linkAB = l.ID
	post("/queue-links", map[string]any{"fromQueueDefinitionId": b.queueID, "toQueueDefinitionId": cq.queueID, "trigger": "manual"}, &l)
	w.linkBC = l.ID
	// A kiosk link: the page keeps no device cookie, so no per-device
	// limit applies (the client keeps no cookies anyway).
	var jl struct{ Token string }
	post("/queues/"+a.queueID+"/join-links", map[string]any{"label": "History kiosk", "kiosk": true}, &jl)
	w.joinA = jl.Token
	return w
}
