package turns_test

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// TestPositionsStayExactAcrossProcesses drives a random mix of operations
// through one service while a second service on the same store (another
// process) reads positions: after every step each waiting turn's position,
// as the reader sees it, must be its place in the line recomputed from
// scratch. The reader's cached line is patched from the recorded changes,
// reloaded when it falls too far behind or meets a reset.
func TestPositionsStayExactAcrossProcesses(t *testing.T) {
	f := newFixture(t)
	reader := turns.NewService(f.repo, f.queuesRepo, f.store, f.bus, f.jobs, f.clock, turns.Hooks{})
	_, run := f.queue(queues.CreateInput{Capacity: &queues.Capacity{MaxTurns: platform.Ptr(40), WaitlistEnabled: platform.Ptr(true)},
		DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true)}})
	rng := rand.New(rand.NewPCG(1, 2))
	var ids []string
	pick := func() string { return ids[rng.IntN(len(ids))] }
	prios := []queues.Priority{queues.PriorityVeryHigh, queues.PriorityHigh, queues.PriorityNormal, queues.PriorityLow}

	for step := range 600 {
		switch op := rng.IntN(12); {
		case op < 4 || len(ids) == 0:
			ids = append(ids, f.take(run, turns.CreateInput{}).ID)
		case op == 4:
			_, _ = f.svc.Next(f.ctx, account, run, turns.CallInput{})
		case op == 5:
			_, _ = f.svc.Hold(f.ctx, account, pick())
		case op == 6:
			_, _ = f.svc.Release(f.ctx, account, pick())
		case op == 7:
			p := prios[rng.IntN(len(prios))]
			_, _ = f.svc.SetPriority(f.ctx, account, pick(), turns.PriorityInput{Priority: &p})
		case op == 8:
			_, _ = f.svc.Cancel(f.ctx, account, pick())
		case op == 9:
			_, _ = f.svc.Reopen(f.ctx, account, pick())
		case op == 10:
			_, _ = f.svc.Call(f.ctx, account, pick(), turns.CallInput{})
		case op == 11 && step%50 == 0:
			// A change the journal cannot describe.
			f.force(pick(), func(*turns.Turn) {})
		}
		if step%3 != 0 && step%97 != 0 {
			continue // let the reader fall a few versions behind
		}
		checkPositions(t, f, reader, run, step)
	}
}

func checkPositions(t *testing.T, f *fixture, reader *turns.Service, run string, step int) {
	t.Helper()
	page, err := f.svc.List(f.ctx, account, run, turns.ListFilter{Statuses: []turns.Status{turns.Waiting}}, platform.PageRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	want := page.Items
	sort.Slice(want, func(i, j int) bool { return want[i].Key().Less(want[j].Key()) })
	for i, w := range want {
		got, err := reader.Get(f.ctx, account, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Position == nil || *got.Position != i+1 {
			t.Fatalf("step %d: turn %s: want position %d, got %v", step, w.ID, i+1, got.Position)
		}
	}
}

// TestChangeAnswersStayExactAcrossProcesses: two services on one store
// (two processes) both change the line; the position in each change's
// answer, built inside its transaction from the process's cached line
// patched with the changes the other process made meanwhile, must be the
// turn's place in the line recomputed from scratch.
func TestChangeAnswersStayExactAcrossProcesses(t *testing.T) {
	f := newFixture(t)
	other := turns.NewService(f.repo, f.queuesRepo, f.store, f.bus, f.jobs, f.clock, turns.Hooks{})
	_, run := f.queue(queues.CreateInput{DispatchFlow: &queues.DispatchFlow{AllowReopen: platform.Ptr(true)}})
	rng := rand.New(rand.NewPCG(3, 4))
	var ids []string
	prios := []queues.Priority{queues.PriorityVeryHigh, queues.PriorityHigh, queues.PriorityNormal, queues.PriorityLow}

	for step := range 400 {
		svc := f.svc
		if rng.IntN(2) == 0 {
			svc = other
		}
		var (
			v   turns.View
			err error
		)
		switch op := rng.IntN(6); {
		case op < 3 || len(ids) == 0:
			v, _, err = svc.Create(f.ctx, account, run, turns.CreateInput{})
			if err == nil {
				ids = append(ids, v.ID)
			}
		case op == 3:
			_, _ = svc.Next(f.ctx, account, run, turns.CallInput{})
			continue
		case op == 4:
			p := prios[rng.IntN(len(prios))]
			v, err = svc.SetPriority(f.ctx, account, ids[rng.IntN(len(ids))], turns.PriorityInput{Priority: &p})
		case op == 5:
			v, err = svc.Release(f.ctx, account, ids[rng.IntN(len(ids))])
		}
		if err != nil || v.Status != turns.Waiting {
			continue
		}
		page, err := f.svc.List(f.ctx, account, run, turns.ListFilter{Statuses: []turns.Status{turns.Waiting}},
			platform.PageRequest{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		line := page.Items
		sort.Slice(line, func(i, j int) bool { return line[i].Key().Less(line[j].Key()) })
		want := -1
		for i, w := range line {
			if w.ID == v.ID {
				want = i + 1
			}
		}
		if v.Position == nil || *v.Position != want {
			t.Fatalf("step %d: turn %s: the change's answer says position %v, the line %d", step, v.ID, v.Position, want)
		}
	}
}
