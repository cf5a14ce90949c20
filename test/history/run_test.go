package history

import (
	"testing"
	"time"
)

// TestHistory runs the mixed workload against the memory adapter in
// process and against three `qms serve` processes on one PostgreSQL
// database, and checks the history and the quiescent states.
func TestHistory(t *testing.T) {
	t.Run("memory", func(t *testing.T) { runHistory(t, memoryBackend(t)) })
	t.Run("postgres-cluster", func(t *testing.T) { runHistory(t, clusterBackend(t, 3)) })
}

func runHistory(t *testing.T, b *backend) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("%s: seed %d (-history.seed=%d repeats the choices, not the interleaving)", b.name, seed, seed)
	h := &History{}
	c := newCaller(h, b.urls, b.key)
	w := setup(t, c)
	wl := newWorkload(c, w, seed)
	cursor := wl.streamCursor(t)
	ck := newChecker()

	total := loadTime()
	var loaded time.Duration
	var s *state
	for phase := 0; loaded < total; phase++ {
		l := min(burstLength(total), total-loaded)
		start := time.Now()
		wl.burst(*clientsFlag, seed+int64(phase)*1_000_003, start.Add(l))
		took := time.Since(start) // past l by the slowest answer
		loaded += took
		q := time.Now()
		s = wl.quiesce(t, ck, loaded >= total)
		t.Logf("%s: burst %d: %s of load, quiescent checks %s", b.name, phase+1,
			took.Round(time.Millisecond), time.Since(q).Round(time.Millisecond))
	}
	checksStart := time.Now()
	clientOps := 0
	ops := h.Ops()
	for _, o := range ops {
		if o.Client >= 0 {
			clientOps++
		}
	}

	byTurn := opsByTurn(ops)
	checkAnswers(ck, ops)
	wl.checkCreates(ck, ops, s)
	wl.checkLastChanges(ck, byTurn, s)
	calls := checkCalls(ck, ops)
	checkNextOrder(ck, ops, byTurn)
	checkUpdatedAt(ck, ops)
	wl.checkReentryLimits(ck, ops)
	wl.checkWaitlistOrder(ck, ops, byTurn)
	wl.checkCodeInUse(ck, ops, byTurn)
	wl.checkEvents(ck, ops, s, calls, wl.readEvents(t, cursor))
	wl.checkSlots(t, ck, ops)
	wl.checkNotifications(t, ck, ops, s)
	wl.checkReminders(t, ck, ops)
	if len(b.logs) > 0 {
		lc, err := countLogs(b.logs)
		if err != nil {
			t.Fatal(err)
		}
		ck.check("server logs: no `deadlock detected` line", lc.deadlock == 0, "%d lines", lc.deadlock)
		ck.check("server logs: no SQLSTATE 40P01 line", lc.sqlstate40P01 == 0, "%d lines", lc.sqlstate40P01)
		ck.check("server logs: no 5xx access line", lc.status5xx == 0, "%d lines", lc.status5xx)
		t.Logf("%s logs: %d lines, %d `deadlock detected`, %d `40P01`, %d units of work run again after a conflict, %d 5xx answers",
			b.name, lc.lines, lc.deadlock, lc.sqlstate40P01, lc.retried, lc.status5xx)
		// The bursts are there to make intakes share a transaction (the
		// group commit): a history in which none did checked nothing of it.
		joined, err := sumMetric(b.urls, "qms_intake_chain_joined_total")
		if err != nil {
			t.Fatal(err)
		}
		ck.check("intakes joined another's transaction (group commit exercised)", joined > 0, "%d joined", joined)
		t.Logf("%s: %d intakes joined another intake's transaction", b.name, joined)
	}
	t.Logf("%s: history checks %s", b.name, time.Since(checksStart).Round(time.Millisecond))
	t.Logf("%s: %d client ops in %s of load by %d clients on %d process(es): %.0f ops/s; %d requests in all\n%s",
		b.name, clientOps, loaded.Round(time.Millisecond), *clientsFlag, len(b.urls),
		float64(clientOps)/loaded.Seconds(), len(ops), ck.table())
	t.Logf("%s: op mix: %s", b.name, opSummary(ops))
	ck.report(t)
}
