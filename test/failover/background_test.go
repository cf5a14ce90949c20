package failover

import (
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
)

// background is the background work the failover test creates after a
// failover (the crash's), each piece run by River later: an automatic
// forward along a queue link, a HYBRID appointment checked in before its
// slot (joining the line at the slot's start), a tolerance no-show, and a
// forward record for retention to prune. Webhook deliveries of the turns
// created after the failover are asserted with every other delivery.
type background struct {
	t     testing.TB
	admin *apptest.App

	fwdSource, fwdDestRun string // the forwarded turn, and the run it goes to
	fwdCompletedAt        time.Time
	appointment           string // checked in before its slot
	slotStart             time.Time
	tolTurn               string
	tolCalledAt           time.Time
}

// retentionEnv makes the retention job run every 2 s and prune finished
// forward records after 15 s: a forward made after the failover is gone
// within about 20 s only if retention ran after it.
var retentionEnv = []string{"QMS_RETENTION_INTERVAL=2s", "QMS_RETENTION_FORWARDS=15s"}

// api sends a request until it is answered otherwise than 503 (the
// formation may still be settling), for up to 20 s, and wants status.
func (b *background) api(method, path string, body any, status int, out any) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := b.admin.API(method, path, body)
		if r.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			r.Must(status, out)
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// setUp creates the queues, the link and the slot's queue: done before
// the faults, as an operator would have them.
func (b *background) setUp(entityID string) (fwdRun, hybridRun, tolRun string) {
	b.t.Helper()
	queue := func(body map[string]any) (id, run string) {
		body["entityId"] = entityID
		var q struct {
			ID   string
			Runs []struct{ ID string }
		}
		b.api(http.MethodPost, "/queues", body, http.StatusCreated, &q)
		return q.ID, q.Runs[0].ID
	}
	fromQ, fromRun := queue(map[string]any{"name": "Reception", "type": "TURN", "turnPrefix": "R",
		"dispatchFlow": map[string]any{"trackService": false}})
	toQ, toRun := queue(map[string]any{"name": "Cashier", "type": "TURN"})
	b.api(http.MethodPost, "/queue-links", map[string]any{"fromQueueDefinitionId": fromQ, "toQueueDefinitionId": toQ,
		"keepNumber": true}, http.StatusCreated, nil)
	b.fwdDestRun = toRun
	_, hybridRun = queue(map[string]any{"name": "Vaccination", "type": "HYBRID"})
	_, tolRun = queue(map[string]any{"name": "Pharmacy desk", "type": "TURN", "tolerance": map[string]any{"graceMinutes": 1}})
	return fromRun, hybridRun, tolRun
}

// create makes the work, after a failover.
func (b *background) create(fwdRun, hybridRun, tolRun string) {
	b.t.Helper()
	// The forward: a turn served and completed in the link's source queue.
	var src struct{ ID string }
	b.api(http.MethodPost, "/queue-runs/"+fwdRun+"/turns", map[string]any{}, http.StatusCreated, &src)
	b.api(http.MethodPost, "/queue-runs/"+fwdRun+"/dispatch/next", map[string]any{}, http.StatusCreated, nil)
	b.api(http.MethodPost, "/turns/"+src.ID+"/complete", map[string]any{}, http.StatusCreated, nil)
	b.fwdSource, b.fwdCompletedAt = src.ID, time.Now()
	for time.Since(b.fwdCompletedAt) < 10*time.Second {
		if b.forwarded() {
			b.t.Logf("background work created after the failover: the forward made within %v of the completion",
				time.Since(b.fwdCompletedAt).Round(10*time.Millisecond))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The HYBRID appointment: a one-minute slot starting at the next whole
	// minute at least 20 s away, booked and checked in now, early.
	now := time.Now().UTC()
	start := now.Truncate(time.Minute).Add(time.Minute)
	if start.Sub(now) < 20*time.Second {
		start = start.Add(time.Minute)
	}
	b.slotStart = start
	var gen struct {
		Slots []struct{ ID string }
	}
	b.api(http.MethodPost, "/queue-runs/"+hybridRun+"/slots", map[string]any{"date": start.Format(time.DateOnly),
		"startTime": start.Format("15:04"), "endTime": start.Add(time.Minute).Format("15:04"), "slotMinutes": 1, "capacity": 1},
		http.StatusCreated, &gen)
	if len(gen.Slots) != 1 {
		b.t.Fatalf("HYBRID: %d slots generated for %s", len(gen.Slots), start.Format("15:04"))
	}
	var apt struct {
		ID     string
		TurnID *string
	}
	b.api(http.MethodPost, "/queue-runs/"+hybridRun+"/appointments", map[string]any{"slotId": gen.Slots[0].ID}, http.StatusCreated, &apt)
	b.api(http.MethodPost, "/appointments/"+apt.ID+"/check-in", nil, http.StatusCreated, &apt)
	if apt.TurnID != nil {
		b.t.Fatalf("HYBRID: an appointment checked in before its slot is in the line at once")
	}
	b.appointment = apt.ID

	// The tolerance no-show: called now, due a minute later.
	var tol struct{ ID string }
	b.api(http.MethodPost, "/queue-runs/"+tolRun+"/turns", map[string]any{}, http.StatusCreated, &tol)
	b.api(http.MethodPost, "/queue-runs/"+tolRun+"/dispatch/next", map[string]any{}, http.StatusCreated, nil)
	b.tolTurn, b.tolCalledAt = tol.ID, time.Now()
}

// forwarded reports whether the forwarded turn waits in the destination
// run (its forward record may be pruned already).
func (b *background) forwarded() bool {
	var page struct{ Data []struct{ ID string } }
	b.api(http.MethodGet, "/queue-runs/"+b.fwdDestRun+"/turns", nil, http.StatusOK, &page)
	return len(page.Data) == 1
}

// verify waits for each piece of work to have run, and logs how long
// after it was due.
func (b *background) verify() {
	b.t.Helper()
	type check struct {
		name string
		due  time.Time
		done func() bool
		ok   bool
	}
	forwarded := b.forwarded
	checks := []*check{
		{name: "forward", due: b.fwdCompletedAt, done: forwarded},
		{name: "retention of the forward's record", due: b.fwdCompletedAt.Add(15 * time.Second), done: func() bool {
			var page struct{ Data []struct{ Status string } }
			b.api(http.MethodGet, "/turns/"+b.fwdSource+"/forwards", nil, http.StatusOK, &page)
			return len(page.Data) == 0 && forwarded()
		}},
		{name: "HYBRID join at the slot's start", due: b.slotStart, done: func() bool {
			var apt struct{ TurnID *string }
			b.api(http.MethodGet, "/appointments/"+b.appointment, nil, http.StatusOK, &apt)
			return apt.TurnID != nil
		}},
		{name: "tolerance no-show", due: b.tolCalledAt.Add(time.Minute), done: func() bool {
			var v struct{ Status string }
			b.api(http.MethodGet, "/turns/"+b.tolTurn, nil, http.StatusOK, &v)
			return v.Status == "NO_SHOW"
		}},
	}
	deadline := b.tolCalledAt.Add(time.Minute + 45*time.Second)
	if d := b.slotStart.Add(45 * time.Second); d.After(deadline) {
		deadline = d
	}
	for {
		pending := 0
		for _, c := range checks {
			if c.ok {
				continue
			}
			if c.done() {
				c.ok = true
				b.t.Logf("background work created after the failover: %s ran (confirmed %.1f s after it was due)", c.name, time.Since(c.due).Seconds())
				continue
			}
			pending++
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, c := range checks {
				if !c.ok {
					b.t.Errorf("background work created after the failover: %s never ran (due %s)", c.name, c.due.Format(time.TimeOnly))
				}
			}
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
