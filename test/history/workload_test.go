package history

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// registry is what the clients have seen: the turns of each run (from
// their own answers and from the quiescent listings), the idempotency keys
// sent, the appointments booked.
type registry struct {
	mu    sync.Mutex
	turns map[string][]string // run id -> turn ids, in the order seen
	seen  map[string]bool
	// hint is the last status an answer showed for a turn: only a hint for
	// picking turns an op may apply to (others change them concurrently).
	hint map[string]string
	// coded are the turns made with an access code (run C).
	coded []string
	keys  []keyed
	appts []string
	// returned are turns one client called, held and released with nothing
	// else touching them: the next one called at their priority.
	returned []returnedCall
	// tickets are ticket links of A's turns (made by staff or by a join),
	// which open the customer's ticket page: help requests, leaving.
	tickets []ticketRef
	// head is pickHead's cursor per run.
	head map[string]int
	// transferKept are the turns a transfer admitted with the source's
	// number and code (not drawn from their run's counter).
	transferKept map[string]bool
}

// keyed is a create sent with an idempotency key, to send again.
type keyed struct {
	key  string
	run  *runInfo
	body map[string]any
}

type returnedCall struct {
	turn       string
	start, end time.Time // from the call's start to the release's end
	ops        [3]*Op
}

func (r *registry) addTurn(runID, id, status string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == "" {
		return
	}
	if status != "" {
		r.hint[id] = status
	}
	if r.seen[id] {
		return
	}
	r.seen[id] = true
	r.turns[runID] = append(r.turns[runID], id)
}

// pickTurn returns a turn of the run, mostly one whose last seen status is
// among want (so most ops apply), sometimes any; "" when none was seen.
func (r *registry) pickTurn(rng *rand.Rand, runID string, want ...string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := r.turns[runID]
	if len(ids) == 0 {
		return ""
	}
	if len(want) > 0 && rng.Intn(5) > 0 {
		var fit []string
		for i := len(ids) - 1; i >= 0 && len(fit) < 40; i-- {
			if slices.Contains(want, r.hint[ids[i]]) {
				fit = append(fit, ids[i])
			}
		}
		if len(fit) > 0 {
			return fit[rng.Intn(len(fit))]
		}
	}
	if len(ids) > 30 && rng.Intn(5) > 0 {
		ids = ids[len(ids)-30:]
	}
	return ids[rng.Intn(len(ids))]
}

// pickHead returns the run's oldest turn last seen WAITING: most likely
// the head of its line, the turn a concurrent next takes. The scan starts
// at a cursor past the turns seen leaving the line for good.
func (r *registry) pickHead(runID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := r.turns[runID]
	i := r.head[runID]
	for i < len(ids) && finishedHint[r.hint[ids[i]]] {
		i++
	}
	r.head[runID] = i
	for ; i < len(ids); i++ {
		if r.hint[ids[i]] == "WAITING" {
			return ids[i]
		}
	}
	return ""
}

// finishedHint are the statuses a turn seldom leaves (only a reopen does):
// pickHead's cursor moves past them.
var finishedHint = map[string]bool{"COMPLETED": true, "CANCELLED": true, "NO_SHOW": true}

// throttle lets an action through at most once per period, whichever client
// asks: closing runs and switching the numbering stay rare events.
type throttle struct {
	mu     sync.Mutex
	last   time.Time
	period time.Duration
}

func (th *throttle) allow() bool {
	th.mu.Lock()
	defer th.mu.Unlock()
	if time.Since(th.last) < th.period {
		return false
	}
	th.last = time.Now()
	return true
}

// workload drives the clients.
type workload struct {
	c      *caller
	w      *world
	reg    *registry
	procs  int
	prefix string // makes the idempotency keys of this test unique
	seq    atomic.Int64
	flips  throttle
	resets throttle
}

func newWorkload(c *caller, w *world, seed int64) *workload {
	return &workload{c: c, w: w, procs: len(c.urls), prefix: fmt.Sprintf("h%x", seed&0xffffffff),
		reg: &registry{turns: map[string][]string{}, seen: map[string]bool{}, hint: map[string]string{},
			head: map[string]int{}, transferKept: map[string]bool{}},
		flips: throttle{period: 400 * time.Millisecond}, resets: throttle{period: 3 * time.Second}}
}

// burst runs n clients until the deadline, each with its own random
// source derived from seed.
func (wl *workload) burst(n int, seed int64, until time.Time) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(i)*7919))
			for time.Now().Before(until) {
				wl.step(i, rng)
			}
		}()
	}
	wg.Wait()
}

// op is one kind of step and its weight in the mix.
type op struct {
	weight int
	do     func(wl *workload, client int, rng *rand.Rand)
}

var mix = []op{
	// Intake and dispatch about balanced, so the lines stay of a size a
	// waiting room has, however fast the backend.
	{17, (*workload).intake},
	{2, (*workload).intakeBurst}, // five at once: 10 intakes
	{23, (*workload).next},
	{5, (*workload).call},
	{3, (*workload).assignStation},
	{4, (*workload).arrive},
	{7, func(wl *workload, c int, rng *rand.Rand) { wl.turnOp(c, rng, "start") }},
	{10, func(wl *workload, c int, rng *rand.Rand) { wl.turnOp(c, rng, "complete") }},
	{3, func(wl *workload, c int, rng *rand.Rand) { wl.turnOp(c, rng, "no-show") }},
	{4, func(wl *workload, c int, rng *rand.Rand) { wl.turnOp(c, rng, "hold") }},
	{5, func(wl *workload, c int, rng *rand.Rand) { wl.turnOp(c, rng, "release") }},
	{4, func(wl *workload, c int, rng *rand.Rand) { wl.turnOp(c, rng, "cancel") }},
	{4, func(wl *workload, c int, rng *rand.Rand) { wl.turnOp(c, rng, "reopen") }},
	{3, (*workload).priority},
	{2, (*workload).forward},
	{2, (*workload).callHoldRelease},
	{3, (*workload).codedReturn},
	{1, (*workload).runFlip},
	{1, (*workload).numberingReset},
	{6, (*workload).book},
	{1, (*workload).cancelAppointment},
	// The customer's side, and what staff do beside the line: each writes
	// rows about a turn while it waits (a ticket link, a help request and
	// its answer, the joined message), which must never hide the turn from
	// next (docs/turns.md, the lock order; checkNextOrder).
	{4, (*workload).join},
	{4, (*workload).ticketLink},
	{3, (*workload).askHelp},
	{2, (*workload).answerHelp},
	{1, (*workload).leave},
	{2, (*workload).transfer},
}

var mixTotal = func() int {
	n := 0
	for _, o := range mix {
		n += o.weight
	}
	return n
}()

func (wl *workload) step(client int, rng *rand.Rand) {
	n := rng.Intn(mixTotal)
	for _, o := range mix {
		if n < o.weight {
			o.do(wl, client, rng)
			return
		}
		n -= o.weight
	}
}

func (wl *workload) proc(client int) int { return client % wl.procs }

// anyRun picks a turn run: A a little more often, it has no capacity.
func (wl *workload) anyRun(rng *rand.Rand) *runInfo {
	switch n := rng.Intn(10); {
	case n < 4:
		return wl.w.runs[0]
	case n < 7:
		return wl.w.runs[1]
	default:
		return wl.w.runs[2]
	}
}

func (wl *workload) key() string {
	return fmt.Sprintf("%s-%06d", wl.prefix, wl.seq.Add(1))
}

// intake takes a turn: without a key, with a new key (sometimes sent from
// two processes at once), or with a key sent before (from another process).
func (wl *workload) intake(client int, rng *rand.Rand) {
	r := wl.anyRun(rng)
	body := map[string]any{}
	if rng.Intn(3) == 0 {
		body["peopleCount"] = 1 + rng.Intn(3)
	}
	if rng.Intn(2) == 0 {
		// Half the customers leave a number: their turns are messaged
		// (the log outbox), checked by checkNotifications.
		body["phone"] = fmt.Sprintf("+34600%06d", wl.seq.Add(1)%1_000_000)
		if rng.Intn(4) == 0 {
			body["notifyWhatsapp"] = true
		}
	}
	if r == wl.w.runs[2] && rng.Intn(2) == 0 {
		body["accessCode"] = wl.w.codes[rng.Intn(len(wl.w.codes))]
	}
	send := func(proc int, k keyed) *Op { return wl.sendIntake(client, proc, k) }
	switch n := rng.Intn(10); {
	case n < 5: // no key
		send(wl.proc(client), keyed{run: r, body: body})
	case n < 8: // a new key, once or from two processes at once
		k := keyed{key: wl.key(), run: r, body: body}
		k.body["idempotencyKey"] = k.key
		if rng.Intn(3) == 0 {
			var wg sync.WaitGroup
			for p := range 2 {
				wg.Add(1)
				go func() { defer wg.Done(); send(wl.proc(client)+p, k) }()
			}
			wg.Wait()
		} else {
			send(wl.proc(client), k)
		}
		wl.reg.mu.Lock()
		wl.reg.keys = append(wl.reg.keys, k)
		wl.reg.mu.Unlock()
	default: // a key sent before, from another process
		wl.reg.mu.Lock()
		var k keyed
		if len(wl.reg.keys) > 0 {
			k = wl.reg.keys[rng.Intn(len(wl.reg.keys))]
		}
		wl.reg.mu.Unlock()
		if k.key == "" {
			return
		}
		send(wl.proc(client)+1, k)
	}
}

// sendIntake sends an intake of k to the process proc and registers the
// turn it made.
func (wl *workload) sendIntake(client, proc int, k keyed) *Op {
	o := wl.c.do(req{client: client, proc: proc, kind: "intake", run: k.run.name, method: http.MethodPost,
		path: "/queue-runs/" + k.run.runID + "/turns", body: k.body, key: k.key})
	if o.Status == http.StatusCreated {
		v := o.TurnView()
		wl.reg.addTurn(k.run.runID, v.ID, v.Status)
		if _, ok := k.body["accessCode"]; ok {
			wl.reg.mu.Lock()
			wl.reg.coded = append(wl.reg.coded, v.ID)
			wl.reg.mu.Unlock()
		}
	}
	return o
}

// intakeBurst sends several intakes of one run to one process at once, so
// they queue at the run's gate there and share a transaction (the group
// commit of adapters/postgres/intakechain.go): some without a key, one new
// key twice (the second in a chain is the first's replay), sometimes an
// access code (run C: one active turn per code, so a member fails alone).
func (wl *workload) intakeBurst(client int, rng *rand.Rand) {
	r := wl.anyRun(rng)
	proc := wl.proc(client)
	k := keyed{key: wl.key(), run: r, body: map[string]any{}}
	k.body["idempotencyKey"] = k.key
	code := wl.w.codes[rng.Intn(len(wl.w.codes))] // rng is not safe for the goroutines
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch {
			case i < 2:
				wl.sendIntake(client, proc, k)
			case r == wl.w.runs[2] && i == 2:
				body := map[string]any{"accessCode": code}
				wl.sendIntake(client, proc, keyed{run: r, body: body})
			default:
				wl.sendIntake(client, proc, keyed{run: r, body: map[string]any{}})
			}
		}()
	}
	wg.Wait()
	wl.reg.mu.Lock()
	wl.reg.keys = append(wl.reg.keys, k)
	wl.reg.mu.Unlock()
}

// stationBody is {"stationId": one of the run's stations} or {} (no station).
func stationBody(rng *rand.Rand, r *runInfo, chance int) map[string]any {
	if len(r.stations) == 0 || rng.Intn(chance) != 0 {
		return map[string]any{}
	}
	return map[string]any{"stationId": r.stations[rng.Intn(len(r.stations))]}
}

func (wl *workload) next(client int, rng *rand.Rand) {
	r := wl.anyRun(rng)
	o := wl.c.do(req{client: client, proc: wl.proc(client), kind: "next", run: r.name, method: http.MethodPost,
		path: "/queue-runs/" + r.runID + "/dispatch/next", body: stationBody(rng, r, 2)})
	if o.Status == http.StatusCreated {
		v := o.TurnView()
		wl.reg.addTurn(r.runID, v.ID, v.Status)
	}
}

// fits are the statuses an op applies to, to pick turns by.
var fits = map[string][]string{
	"call":     {"WAITING", "HELD", "CALLED"},
	"arrive":   {"WAITING", "CALLED", "NO_SHOW"},
	"start":    {"CALLED"},
	"complete": {"IN_SERVICE", "CALLED"},
	"no-show":  {"CALLED"},
	"hold":     {"WAITING", "CALLED"},
	"release":  {"HELD", "WAITLISTED"},
	"cancel":   {"WAITING", "WAITLISTED", "HELD", "CALLED", "IN_SERVICE"},
	"reopen":   {"COMPLETED", "NO_SHOW", "CANCELLED"},
	"priority": {"WAITING", "WAITLISTED"},
	// Ticket links on waiting turns: the rows next must not be hidden by.
	"ticket-link": {"WAITING"},
}

// turnOn picks a run and one of its turns that kind likely applies to.
func (wl *workload) turnOn(rng *rand.Rand, kind string) (*runInfo, string) {
	r := wl.anyRun(rng)
	return r, wl.reg.pickTurn(rng, r.runID, fits[kind]...)
}

func (wl *workload) turnReq(client int, r *runInfo, id, kind string, body any) *Op {
	o := wl.c.do(req{client: client, proc: wl.proc(client), kind: kind, run: r.name, turn: id,
		method: http.MethodPost, path: "/turns/" + id + "/" + kind, body: body})
	if o.Status == http.StatusCreated && kind != "forward" {
		wl.reg.addTurn(r.runID, id, o.TurnView().Status)
	}
	return o
}

func (wl *workload) call(client int, rng *rand.Rand) {
	if r, id := wl.turnOn(rng, "call"); id != "" {
		wl.turnReq(client, r, id, "call", stationBody(rng, r, 3))
	}
}

func (wl *workload) assignStation(client int, rng *rand.Rand) {
	r, id := wl.turnOn(rng, "assign-station")
	if id == "" {
		return
	}
	body := stationBody(rng, r, 1)
	if rng.Intn(4) == 0 {
		body = map[string]any{"stationId": nil}
	}
	wl.turnReq(client, r, id, "assign-station", body)
}

func (wl *workload) arrive(client int, rng *rand.Rand) {
	if r, id := wl.turnOn(rng, "arrive"); id != "" {
		wl.turnReq(client, r, id, "arrive", nil)
	}
}

func (wl *workload) turnOp(client int, rng *rand.Rand, kind string) {
	if r, id := wl.turnOn(rng, kind); id != "" {
		wl.turnReq(client, r, id, kind, nil)
	}
}

var priorities = []string{"VERY_HIGH", "HIGH", "NORMAL", "LOW"}

func (wl *workload) priority(client int, rng *rand.Rand) {
	if r, id := wl.turnOn(rng, "priority"); id != "" {
		wl.turnReq(client, r, id, "priority", map[string]any{"priority": priorities[rng.Intn(len(priorities))]})
	}
}

// forward sends a turn of B to C through the manual link.
func (wl *workload) forward(client int, rng *rand.Rand) {
	b := wl.w.runs[1]
	if id := wl.reg.pickTurn(rng, b.runID); id != "" {
		o := wl.turnReq(client, b, id, "forward", map[string]any{"linkId": wl.w.linkBC})
		if o.Status == http.StatusCreated {
			var f struct{ ToTurnID *string }
			_ = json.Unmarshal(o.Body, &f)
			if f.ToTurnID != nil {
				wl.reg.addTurn(wl.w.runs[2].runID, *f.ToTurnID, "")
			}
		}
	}
}

// codedReturn brings a finished turn made with an access code back: a
// re-entry (arrive) or a reopen, which must respect oneActiveTurnPerCode.
func (wl *workload) codedReturn(client int, rng *rand.Rand) {
	wl.reg.mu.Lock()
	var id string
	if n := len(wl.reg.coded); n > 0 {
		id = wl.reg.coded[max(0, n-1-rng.Intn(20))]
	}
	wl.reg.mu.Unlock()
	if id == "" {
		return
	}
	kind := "reopen"
	if rng.Intn(3) == 0 {
		kind = "arrive"
	}
	wl.turnReq(client, wl.w.runs[2], id, kind, nil)
}

// callHoldRelease calls a turn of A or B, holds it and releases it: a called
// turn held and released is the next one called (issue 10, item 3).
func (wl *workload) callHoldRelease(client int, rng *rand.Rand) {
	r := wl.w.runs[rng.Intn(2)]
	id := wl.reg.pickTurn(rng, r.runID, "WAITING")
	if id == "" {
		return
	}
	var rc returnedCall
	rc.turn = id
	for i, kind := range []string{"call", "hold", "release"} {
		o := wl.turnReq(client, r, id, kind, nil)
		if o.Status != http.StatusCreated {
			return
		}
		rc.ops[i] = o
	}
	rc.start, rc.end = rc.ops[0].Start, rc.ops[2].End
	wl.reg.mu.Lock()
	wl.reg.returned = append(wl.reg.returned, rc)
	wl.reg.mu.Unlock()
}

// runFlip closes a run (or its intake) for a moment and opens it again.
func (wl *workload) runFlip(client int, rng *rand.Rand) {
	if !wl.flips.allow() {
		return
	}
	r := wl.anyRun(rng)
	if rng.Intn(4) == 0 {
		r = wl.w.appt
	}
	pairs := [][2]string{{"close", "open"}, {"close-intake", "open-intake"}}
	p := pairs[rng.Intn(2)]
	run := func(kind string) {
		wl.c.do(req{client: client, proc: wl.proc(client), kind: "run-" + kind, run: r.name, method: http.MethodPost,
			path: "/queue-runs/" + r.runID + "/" + kind})
	}
	run(p[0])
	time.Sleep(time.Duration(50+rng.Intn(200)) * time.Millisecond)
	run(p[1])
}

// numberingReset switches resetNumberingDaily of A: under the new rule it
// never rewinds the numbering, so the checks see no effect in one day.
func (wl *workload) numberingReset(client int, rng *rand.Rand) {
	if !wl.resets.allow() {
		return
	}
	a := wl.w.runs[0]
	wl.c.do(req{client: client, proc: wl.proc(client), kind: "numbering-reset", run: a.name, method: http.MethodPut,
		path: "/queues/" + a.queueID + "/numbering-reset", body: map[string]any{"resetNumberingDaily": rng.Intn(2) == 0}})
}

// book books a seat on the appointment run: a given slot (the first three,
// so they fill and concurrent bookings meet) or the next available, with a
// key sometimes, from two processes at once sometimes.
func (wl *workload) book(client int, rng *rand.Rand) {
	d := wl.w.appt
	body := map[string]any{}
	if rng.Intn(3) > 0 {
		body["slotId"] = d.slots[rng.Intn(min(3, len(d.slots)))].ID
	}
	if rng.Intn(2) == 0 {
		// Half the bookings leave a number: their reminders are checked
		// by checkReminders.
		body["phone"] = fmt.Sprintf("+34601%06d", wl.seq.Add(1)%1_000_000)
	}
	k := keyed{run: d, body: body}
	if rng.Intn(2) == 0 {
		k.key = wl.key()
		body["idempotencyKey"] = k.key
	}
	send := func(proc int) {
		o := wl.c.do(req{client: client, proc: proc, kind: "book", run: d.name, method: http.MethodPost,
			path: "/queue-runs/" + d.runID + "/appointments", body: body, key: k.key})
		if o.Status == http.StatusCreated {
			var a struct{ ID string }
			_ = json.Unmarshal(o.Body, &a)
			wl.reg.mu.Lock()
			wl.reg.appts = append(wl.reg.appts, a.ID)
			wl.reg.mu.Unlock()
		}
	}
	if rng.Intn(3) == 0 {
		var wg sync.WaitGroup
		for p := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); send(wl.proc(client) + p) }()
		}
		wg.Wait()
	} else {
		send(wl.proc(client))
	}
}

func (wl *workload) cancelAppointment(client int, rng *rand.Rand) {
	wl.reg.mu.Lock()
	var id string
	if n := len(wl.reg.appts); n > 0 {
		id = wl.reg.appts[rng.Intn(n)]
	}
	wl.reg.mu.Unlock()
	if id != "" {
		wl.c.do(req{client: client, proc: wl.proc(client), kind: "appointment-cancel", run: wl.w.appt.name, turn: id,
			method: http.MethodPost, path: "/appointments/" + id + "/cancel"})
	}
}

// join takes a turn of A on its kiosk join page (the customer's path: the
// turn and its ticket link in one transaction, and the joined message for
// a phone). Its ticket token is kept for help requests.
func (wl *workload) join(client int, rng *rand.Rand) {
	a := wl.w.runs[0]
	body := map[string]any{}
	if rng.Intn(2) == 0 {
		body["phone"] = fmt.Sprintf("+34611%06d", wl.seq.Add(1)%1_000_000)
	}
	o := wl.c.do(req{client: client, proc: wl.proc(client), kind: "join", run: a.name, method: http.MethodPost,
		path: "/join/" + wl.w.joinA, body: body, public: true})
	if o.Status != http.StatusCreated {
		return
	}
	j := o.Joined()
	wl.reg.addTurn(a.runID, j.TurnID, j.Status)
	wl.reg.mu.Lock()
	wl.reg.tickets = append(wl.reg.tickets, ticketRef{token: j.Ticket, turn: j.TurnID})
	wl.reg.mu.Unlock()
}

// ticketLink makes a ticket link for a turn, mostly the head of the line:
// staff handing the customer their page. The op names no turn (o.Turn): it
// changes none, so it opens and closes no window of the checks.
func (wl *workload) ticketLink(client int, rng *rand.Rand) {
	r, id := wl.turnOn(rng, "ticket-link")
	if rng.Intn(4) > 0 {
		// Mostly the head of the line: the turn a concurrent next takes,
		// and the one a key's KEY SHARE would hide from it.
		id = wl.reg.pickHead(r.runID)
	}
	if id == "" {
		return
	}
	o := wl.c.do(req{client: client, proc: wl.proc(client), kind: "ticket-link", run: r.name, method: http.MethodPost,
		path: "/turns/" + id + "/ticket-links", body: map[string]any{}})
	if o.Status != http.StatusCreated || r != wl.w.runs[0] {
		return
	}
	var l struct{ Token string }
	_ = json.Unmarshal(o.Body, &l)
	wl.reg.mu.Lock()
	wl.reg.tickets = append(wl.reg.tickets, ticketRef{token: l.Token, turn: id})
	wl.reg.mu.Unlock()
}

// ticketRef is a ticket link's token and the turn it opens.
type ticketRef struct{ token, turn string }

// pickTicket returns one of the newest ticket links of A, zero when none.
func (wl *workload) pickTicket(rng *rand.Rand) ticketRef {
	wl.reg.mu.Lock()
	defer wl.reg.mu.Unlock()
	n := len(wl.reg.tickets)
	if n == 0 {
		return ticketRef{}
	}
	return wl.reg.tickets[max(0, n-1-rng.Intn(30))]
}

// askHelp presses "I need help" on a ticket page of A. It changes no turn
// (o.Turn stays empty).
func (wl *workload) askHelp(client int, rng *rand.Rand) {
	if tk := wl.pickTicket(rng); tk.token != "" {
		wl.c.do(req{client: client, proc: wl.proc(client), kind: "help", run: wl.w.runs[0].name, method: http.MethodPost,
			path: "/ticket/" + tk.token + "/help", public: true})
	}
}

// leave presses "leave the queue" on a ticket page of A: the turn is
// cancelled with reason customer (a change of the turn, so the op names it).
func (wl *workload) leave(client int, rng *rand.Rand) {
	if tk := wl.pickTicket(rng); tk.token != "" {
		o := wl.c.do(req{client: client, proc: wl.proc(client), kind: "leave", run: wl.w.runs[0].name, turn: tk.turn,
			method: http.MethodPost, path: "/ticket/" + tk.token + "/leave", public: true})
		if o.Status == http.StatusOK {
			wl.reg.addTurn(wl.w.runs[0].runID, tk.turn, o.TurnView().Status)
		}
	}
}

// answerHelp answers one of A's open help requests with a quick reply.
func (wl *workload) answerHelp(client int, rng *rand.Rand) {
	a := wl.w.runs[0]
	o := wl.c.do(req{client: client, proc: wl.proc(client), kind: "help-list", run: a.name, method: http.MethodGet,
		path: "/queue-runs/" + a.runID + "/help-requests?status=OPEN&limit=20"})
	var page struct{ Data []struct{ ID string } }
	if o.Status != http.StatusOK || json.Unmarshal(o.Body, &page) != nil || len(page.Data) == 0 {
		return
	}
	id := page.Data[rng.Intn(len(page.Data))].ID
	wl.c.do(req{client: client, proc: wl.proc(client), kind: "help-answer", run: a.name, method: http.MethodPost,
		path: "/help-requests/" + id + "/answer", body: map[string]any{"reply": helpReplies[rng.Intn(len(helpReplies))]}})
}

// transfer moves a turn of A to C (A has transferEnabled): the source is
// cancelled (reason transferred) and C admits a turn under its own rules,
// keeping the number and code when no unfinished turn of C shows it.
func (wl *workload) transfer(client int, rng *rand.Rand) {
	a, c := wl.w.runs[0], wl.w.runs[2]
	id := wl.reg.pickTurn(rng, a.runID, "WAITING", "CALLED", "HELD")
	if id == "" {
		return
	}
	o := wl.c.do(req{client: client, proc: wl.proc(client), kind: "transfer", run: a.name, turn: id,
		method: http.MethodPost, path: "/turns/" + id + "/transfer", body: map[string]any{"queueId": c.queueID}})
	if o.Status != http.StatusCreated {
		return
	}
	tr := o.Transferred()
	wl.reg.addTurn(a.runID, tr.From.ID, tr.From.Status)
	wl.reg.addTurn(c.runID, tr.To.ID, tr.To.Status)
	if tr.To.Number == tr.From.Number && tr.To.DisplayCode == tr.From.DisplayCode {
		wl.reg.mu.Lock()
		wl.reg.transferKept[tr.To.ID] = true
		wl.reg.mu.Unlock()
	}
}
