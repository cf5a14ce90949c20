package turns_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// into sets the fields a turn in status has, the way the operations leave
// them.
func into(t *turns.Turn, status turns.Status, now time.Time) {
	t.Status = status
	switch status {
	case turns.Held:
		t.HeldFrom = turns.HeldWhileWaiting
	case turns.Called:
		t.CalledAt, t.CallCount = &now, 1
	case turns.InService:
		t.CalledAt, t.StartedAt, t.CallCount = &now, &now, 1
	case turns.Completed:
		t.CalledAt, t.StartedAt, t.FinishedAt, t.ReopenTo, t.CallCount = &now, &now, &now, turns.InService, 1
	case turns.NoShow:
		t.CalledAt, t.FinishedAt, t.ReopenTo, t.CallCount = &now, &now, turns.Called, 1
	case turns.Cancelled:
		t.FinishedAt, t.ReopenTo = &now, turns.Waiting
	}
}

// TestStateMachineMatchesRules drives every operation against a turn in
// every status and checks the outcome against turns.Rules: where a rule
// applies the turn moves to its target, everywhere else the operation is
// refused with INVALID_TRANSITION naming the status and the operation.
func TestStateMachineMatchesRules(t *testing.T) {
	ops := []turns.Operation{turns.OpNext, turns.OpCall, turns.OpAssignStation, turns.OpArrive, turns.OpStart,
		turns.OpComplete, turns.OpNoShow, turns.OpHold, turns.OpRelease, turns.OpCancel, turns.OpReopen, turns.OpPriority}
	for _, op := range ops {
		for _, from := range turns.Statuses {
			for _, tracked := range []bool{true, false} {
				name := string(op) + "/" + string(from)
				if !tracked {
					name += "/trackService-off"
				}
				t.Run(name, func(t *testing.T) { runPair(t, op, from, tracked) })
			}
		}
	}
}

func runPair(t *testing.T, op turns.Operation, from turns.Status, tracked bool) {
	f := newFixture(t)
	q, run := f.queue(queues.CreateInput{
		Stations:     []queues.StationInput{{Label: platform.Ptr("Desk")}},
		DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true), TrackService: platform.Ptr(tracked)},
		Tolerance:    &queues.Tolerance{GraceMinutes: platform.Ptr(2)},
	})
	v := f.take(run, turns.CreateInput{})
	f.force(v.ID, func(tt *turns.Turn) { into(tt, from, f.clock.Now()) })

	var got turns.View
	var err error
	switch op {
	case turns.OpNext:
		got, err = f.svc.Next(f.ctx, account, run, turns.CallInput{})
		if from != turns.Waiting {
			wantCode(t, err, turns.CodeNoWaitingTurns)
			return
		}
	case turns.OpCall:
		got, err = f.svc.Call(f.ctx, account, v.ID, turns.CallInput{})
	case turns.OpAssignStation:
		got, err = f.svc.AssignStation(f.ctx, account, v.ID, turns.AssignStationInput{StationID: platform.Patch[string]{Set: true, Value: q.Stations[0].ID}})
	case turns.OpArrive:
		got, err = f.svc.Arrive(f.ctx, account, v.ID)
	case turns.OpStart:
		got, err = f.svc.Start(f.ctx, account, v.ID)
	case turns.OpComplete:
		got, err = f.svc.Complete(f.ctx, account, v.ID)
	case turns.OpNoShow:
		got, err = f.svc.NoShow(f.ctx, account, v.ID)
	case turns.OpHold:
		got, err = f.svc.Hold(f.ctx, account, v.ID)
	case turns.OpRelease:
		got, err = f.svc.Release(f.ctx, account, v.ID)
	case turns.OpCancel:
		got, err = f.svc.Cancel(f.ctx, account, v.ID)
	case turns.OpReopen:
		got, err = f.svc.Reopen(f.ctx, account, v.ID)
	case turns.OpPriority:
		got, err = f.svc.SetPriority(f.ctx, account, v.ID, turns.PriorityInput{Priority: ptrP(queues.PriorityHigh)})
	}

	rule, ok := findRule(op, from)
	// The rules that depend on trackService.
	switch {
	case op == turns.OpStart && from == turns.Called && !tracked:
		wantCode(t, err, turns.CodeServiceNotTracked)
		return
	case op == turns.OpComplete && from == turns.Called && tracked:
		ok = false
	}
	if !ok {
		e := wantCode(t, err, turns.CodeInvalidTransition)
		if e.Details["status"] != string(from) || e.Details["operation"] != string(op) {
			t.Fatalf("details: %v", e.Details)
		}
		if after := f.get(v.ID); after.Status != from {
			t.Fatalf("a refused operation changed the status to %s", after.Status)
		}
		return
	}
	if err != nil {
		t.Fatalf("rule %+v: %v", rule, err)
	}
	if !targetAllows(rule, from, got.Status) {
		t.Fatalf("rule says %q, got %s", rule.To, got.Status)
	}
	if stored := f.get(v.ID); stored.Status != got.Status {
		t.Fatalf("answered %s, stored %s", got.Status, stored.Status)
	}
}

func findRule(op turns.Operation, from turns.Status) (turns.Rule, bool) {
	for _, r := range turns.Rules {
		if r.Op == op && r.From == from {
			return r, true
		}
	}
	return turns.Rule{}, false
}

// targetAllows reads a rule's To: statuses split by "/", "same", or "its
// status before" (reopen of a cancelled turn, which the test cancelled
// from WAITING).
func targetAllows(r turns.Rule, from, got turns.Status) bool {
	if r.To == "its status before" {
		return got == turns.Waiting
	}
	for _, alt := range strings.Split(r.To, "/") {
		if alt == "same" && got == from || turns.Status(alt) == got {
			return true
		}
	}
	return false
}

// TestDocsCarryTheStateTable keeps docs/turns.md equal to the table the
// code enforces.
func TestDocsCarryTheStateTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/turns.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), turns.StateTable()) {
		t.Fatalf("docs/turns.md does not hold the current state table; paste this between the markers:\n\n%s", turns.StateTable())
	}
}
