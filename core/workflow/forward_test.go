package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/test/testkit"
)

type fwdFixture struct {
	t      *testing.T
	ctx    context.Context
	clock  *platformtest.Clock
	store  *memory.Store
	qs     *queues.Service
	turns  *turns.Service
	links  *workflow.Service
	fwd    *workflow.Forwarder
	repo   *memory.Workflow
	qrepo  *memory.Queues
	jobs   *testkit.Jobs
	events *memory.Events
	entity string
}

func newFwdFixture(t *testing.T) *fwdFixture {
	t.Helper()
	clock := platformtest.NewClock(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	ev := set.Events.(*memory.Events)
	bus := events.NewBus(ev)
	ents := entities.NewService(set.Entities, store, clock)
	qrepo := set.Queues.(*memory.Queues)
	qs := queues.NewService(qrepo, ents, store, bus, clock)
	jobs := testkit.NewJobs(store)
	ts := turns.NewService(set.Turns, qrepo, store, bus, jobs, clock, turns.Hooks{})
	repo := set.Workflow.(*memory.Workflow)
	fwd := workflow.NewForwarder(repo, repo, ts, qrepo, store, jobs, clock)
	bus.Subscribe(fwd)
	e, err := ents.Create(context.Background(), acct, entities.CreateInput{Name: platform.Ptr("Branch")})
	if err != nil {
		t.Fatal(err)
	}
	return &fwdFixture{t: t, ctx: context.Background(), clock: clock, store: store, qs: qs, turns: ts,
		links: workflow.NewService(repo, qs, store, clock), fwd: fwd, repo: repo, qrepo: qrepo, jobs: jobs, events: ev, entity: e.ID}
}

// queue creates a TURN queue with a text question "reason" and returns it
// with its open run.
func (f *fwdFixture) queue(prefix string) (string, string) {
	f.t.Helper()
	q, err := f.qs.Create(f.ctx, acct, queues.CreateInput{EntityID: &f.entity, Name: platform.Ptr("Desk " + prefix),
		Type: platform.Ptr("TURN"), TurnPrefix: &prefix, TurnPadding: platform.Ptr(3),
		PreAttention: &queues.PreAttention{Questions: []queues.Question{{ID: platform.Ptr("reason"), Label: platform.Ptr("Reason")}}}})
	if err != nil {
		f.t.Fatal(err)
	}
	return q.ID, q.Runs[0].ID
}

func (f *fwdFixture) link(in workflow.CreateInput) workflow.Link {
	f.t.Helper()
	l, err := f.links.Create(f.ctx, acct, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

// served takes a turn in the run and serves it to completion.
func (f *fwdFixture) served(runID string, in turns.CreateInput) turns.View {
	f.t.Helper()
	v, _, err := f.turns.Create(f.ctx, acct, runID, in)
	if err != nil {
		f.t.Fatal(err)
	}
	f.complete(v.ID)
	return v
}

// complete calls, starts and completes a waiting turn.
func (f *fwdFixture) complete(turnID string) {
	f.t.Helper()
	if _, err := f.turns.Call(f.ctx, acct, turnID, turns.CallInput{}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.turns.Start(f.ctx, acct, turnID); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.turns.Complete(f.ctx, acct, turnID); err != nil {
		f.t.Fatal(err)
	}
}

// run runs a forward job as its runner would.
func (f *fwdFixture) run(j platform.Job, attempt int) error {
	b, _ := json.Marshal(j.Args)
	var args workflow.ForwardArgs
	if err := json.Unmarshal(b, &args); err != nil {
		f.t.Fatal(err)
	}
	return f.fwd.Run(f.ctx, args, attempt, attempt >= workflow.ForwardMaxAttempts)
}

func (f *fwdFixture) forwardsOf(turnID string) []workflow.Forward {
	f.t.Helper()
	out, err := f.fwd.OfTurn(f.ctx, acct, turnID)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// oneForward is the turn's only forward; a test that finds none or several
// fails instead of indexing out of range.
func (f *fwdFixture) oneForward(turnID string) workflow.Forward {
	f.t.Helper()
	fws := f.forwardsOf(turnID)
	if len(fws) != 1 {
		f.t.Fatalf("turn %s has %d forwards, want 1: %+v", turnID, len(fws), fws)
	}
	return fws[0]
}

// oneForwardJob is the only forward job scheduled.
func (f *fwdFixture) oneForwardJob() platform.Job {
	f.t.Helper()
	js := f.jobs.OfKind(workflow.ForwardJobKind)
	if len(js) != 1 {
		f.t.Fatalf("%d forward jobs scheduled, want 1", len(js))
	}
	return js[0]
}

// describeForward prints a forward with the values its pointers hold.
func describeForward(fw workflow.Forward) string {
	return fmt.Sprintf("status %s, attempts %d, error %q: %q", fw.Status, fw.Attempts,
		platform.Deref(fw.ErrorCode, "<nil>"), platform.Deref(fw.ErrorMessage, "<nil>"))
}

func (f *fwdFixture) turnsIn(runID string) []turns.View {
	f.t.Helper()
	p, err := f.turns.List(f.ctx, acct, runID, turns.ListFilter{}, platform.PageRequest{Limit: 100})
	if err != nil {
		f.t.Fatal(err)
	}
	return p.Items
}

func TestCompletionForwardsThroughMatchingLinksOnce(t *testing.T) {
	f := newFwdFixture(t)
	a, runA := f.queue("A")
	b, runB := f.queue("B")
	c, runC := f.queue("C")
	_, runD := f.queue("D")
	d := f.turnsIn(runD) // empty; the queue only receives nothing
	parcels := f.link(workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &b,
		KeepNumber: platform.Ptr(true), KeepFormResponse: platform.Ptr(true),
		Conditions: []workflow.Condition{cond("answer", "reason", "contains", "parcel")}})
	f.link(workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &c,
		Conditions: []workflow.Condition{cond("priority", "", "eq", "HIGH")}}) // does not hold
	f.link(workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &c, Trigger: platform.Ptr("manual")})

	src := f.served(runA, turns.CreateInput{FormResponse: map[string]string{"reason": "Pick up a Parcel"}})
	jobs := f.jobs.OfKind(workflow.ForwardJobKind)
	if len(jobs) != 1 || jobs[0].UniqueKey != src.ID+"/"+parcels.ID {
		t.Fatalf("jobs after completion: %+v", jobs)
	}
	fw := f.forwardsOf(src.ID)
	if len(fw) != 1 || fw[0].Status != workflow.ForwardPending || fw[0].Trigger != "complete" {
		t.Fatalf("forwards before the job: %+v", fw)
	}
	// The job runs, then runs again (a retry, or a second worker).
	for attempt := 1; attempt <= 2; attempt++ {
		if err := f.run(jobs[0], attempt); err != nil {
			t.Fatal(err)
		}
	}
	inB := f.turnsIn(runB)
	if len(inB) != 1 {
		t.Fatalf("turns in B: %d", len(inB))
	}
	nt := inB[0]
	if nt.DisplayCode != src.DisplayCode || nt.FormResponse["reason"] != "Pick up a Parcel" || nt.Status != turns.Waiting {
		t.Fatalf("forwarded turn: %+v", nt)
	}
	fw = f.forwardsOf(src.ID)
	if fw[0].Status != workflow.ForwardDone || *fw[0].ToTurnID != nt.ID || fw[0].Attempts != 1 || fw[0].ForwardedAt == nil {
		t.Fatalf("forward after the job: %+v", fw[0])
	}
	if n := len(f.turnsIn(runC)) + len(d); n != 0 {
		t.Fatalf("a link whose condition fails, or a manual one, forwarded: %d", n)
	}
	// The new turn raised turn.created like any other.
	evs, _ := f.events.List(f.ctx, acct, "", 0)
	created := 0
	for _, e := range evs {
		var c turns.TurnCreated
		if e.Name == platform.EventName[turns.TurnCreated]() && e.Decode(&c) == nil && c.TurnID == nt.ID {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("turn.created of the forwarded turn: %d", created)
	}

	// A chain: the forwarded turn completing in B follows B's links.
	f.link(workflow.CreateInput{FromQueueDefinitionID: &b, ToQueueDefinitionID: &c})
	f.complete(nt.ID)
	jobs = f.jobs.OfKind(workflow.ForwardJobKind)
	if len(jobs) != 2 {
		t.Fatalf("jobs after the second completion: %d", len(jobs))
	}
	if err := f.run(jobs[1], 1); err != nil {
		t.Fatal(err)
	}
	inC := f.turnsIn(runC)
	if len(inC) != 1 || inC[0].DisplayCode != "C001" || len(inC[0].FormResponse) != 0 {
		t.Fatalf("chain to C: %+v", inC)
	}
}

func TestForwardRefusedByTheDestinationIsRecordedAndNotRetried(t *testing.T) {
	f := newFwdFixture(t)
	a, runA := f.queue("A")
	b, runB := f.queue("B")
	c, runC := f.queue("C")
	toB := f.link(workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &b})
	toC := f.link(workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &c})
	if _, err := f.qs.CloseRun(f.ctx, acct, runB); err != nil {
		t.Fatal(err)
	}
	if _, err := f.qs.SetIntake(f.ctx, acct, runC, false); err != nil {
		t.Fatal(err)
	}
	src := f.served(runA, turns.CreateInput{})
	for _, j := range f.jobs.OfKind(workflow.ForwardJobKind) {
		if err := f.run(j, 1); err != nil {
			t.Fatalf("a refusal must not be retried, got %v", err)
		}
	}
	got := map[string]string{}
	for _, fw := range f.forwardsOf(src.ID) {
		if fw.Status != workflow.ForwardFailed || fw.FailedAt == nil || fw.ErrorMessage == nil || fw.ErrorCode == nil {
			t.Fatalf("failed forward: %s", describeForward(fw))
		}
		got[fw.LinkID] = *fw.ErrorCode
	}
	if got[toB.ID] != workflow.CodeNoOpenRun || got[toC.ID] != turns.CodeIntakeClosed {
		t.Fatalf("failures: %v", got)
	}

	// A manual forward tries a failed one again once the destination opens.
	if _, err := f.fwd.ForwardNow(f.ctx, acct, src.ID, workflow.ForwardInput{LinkID: &toC.ID}); !platform.IsCode(err, turns.CodeIntakeClosed) {
		t.Fatalf("manual forward into a closed intake: %v", err)
	}
	if _, err := f.qs.SetIntake(f.ctx, acct, runC, true); err != nil {
		t.Fatal(err)
	}
	fw, err := f.fwd.ForwardNow(f.ctx, acct, src.ID, workflow.ForwardInput{LinkID: &toC.ID})
	if err != nil || fw.Status != workflow.ForwardDone || fw.ErrorCode != nil || len(f.turnsIn(runC)) != 1 {
		t.Fatalf("manual retry: %+v %v", fw, err)
	}
}

func TestManualForward(t *testing.T) {
	f := newFwdFixture(t)
	a, runA := f.queue("A")
	b, runB := f.queue("B")
	c, _ := f.queue("C")
	manual := f.link(workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &b, Trigger: platform.Ptr("manual"),
		Conditions: []workflow.Condition{cond("priority", "", "eq", "LOW")}}) // conditions do not apply to manual forwards
	elsewhere := f.link(workflow.CreateInput{FromQueueDefinitionID: &b, ToQueueDefinitionID: &c})
	v, _, err := f.turns.Create(f.ctx, acct, runA, turns.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	fw, err := f.fwd.ForwardNow(f.ctx, acct, v.ID, workflow.ForwardInput{LinkID: &manual.ID})
	if err != nil || fw.Status != workflow.ForwardDone || fw.Trigger != "manual" {
		t.Fatalf("manual forward: %+v %v", fw, err)
	}
	again, err := f.fwd.ForwardNow(f.ctx, acct, v.ID, workflow.ForwardInput{LinkID: &manual.ID})
	if err != nil || again.ID != fw.ID || len(f.turnsIn(runB)) != 1 {
		t.Fatalf("the second forward through the link: %+v %v, %d turns in B", again, err, len(f.turnsIn(runB)))
	}
	if got := f.turnsIn(runA); got[0].Status != turns.Waiting {
		t.Fatalf("the source turn changed: %s", got[0].Status)
	}
	if _, err := f.fwd.ForwardNow(f.ctx, acct, v.ID, workflow.ForwardInput{LinkID: &elsewhere.ID}); !platform.IsCode(err, workflow.CodeLinkNotFromQueue) {
		t.Fatalf("a link from another queue: %v", err)
	}
	if _, err := f.fwd.ForwardNow(f.ctx, other, v.ID, workflow.ForwardInput{LinkID: &manual.ID}); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account's turn: %v", err)
	}
	if _, err := f.fwd.ForwardNow(f.ctx, acct, v.ID, workflow.ForwardInput{}); !platform.IsCode(err, platform.CodeValidation) {
		t.Fatalf("no linkId: %v", err)
	}
	// Completing the turn later does not forward it through a manual link.
	f.complete(v.ID)
	if n := len(f.jobs.OfKind(workflow.ForwardJobKind)); n != 0 {
		t.Fatalf("jobs after completing: %d", n)
	}
}

// failingTurns makes Admit fail as a database that is away would.
type failingTurns struct{ workflow.Turns }

func (failingTurns) Admit(context.Context, string, string, turns.Admission) (turns.Turn, error) {
	return turns.Turn{}, errors.New("connection refused")
}

func TestForwardJobRetriesInfrastructureErrorsThenRecordsThem(t *testing.T) {
	f := newFwdFixture(t)
	a, runA := f.queue("A")
	b, _ := f.queue("B")
	f.link(workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &b})
	src := f.served(runA, turns.CreateInput{})
	broken := workflow.NewForwarder(f.repo, f.repo, failingTurns{f.turns}, f.qrepo, f.store, f.jobs, f.clock)
	j := f.oneForwardJob()
	b2, _ := json.Marshal(j.Args)
	var args workflow.ForwardArgs
	_ = json.Unmarshal(b2, &args)
	if err := broken.Run(f.ctx, args, 1, false); err == nil {
		t.Fatal("an infrastructure error must be returned for a retry")
	}
	if fw := f.oneForward(src.ID); fw.Status != workflow.ForwardPending {
		t.Fatalf("after a failed attempt: %s", describeForward(fw))
	}
	if err := broken.Run(f.ctx, args, workflow.ForwardMaxAttempts, true); err == nil {
		t.Fatal("the last attempt still reports its error")
	}
	fw := f.oneForward(src.ID)
	if fw.Status != workflow.ForwardFailed || platform.Deref(fw.ErrorCode, "") != workflow.CodeForwardError || fw.Attempts != workflow.ForwardMaxAttempts {
		t.Fatalf("after the last attempt: %s", describeForward(fw))
	}
}

func TestPendingForwardOfADeletedLinkFails(t *testing.T) {
	f := newFwdFixture(t)
	a, runA := f.queue("A")
	b, _ := f.queue("B")
	l := f.link(workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &b})
	src := f.served(runA, turns.CreateInput{})
	if _, err := f.links.Delete(f.ctx, acct, l.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.run(f.oneForwardJob(), 1); err != nil {
		t.Fatal(err)
	}
	if fw := f.oneForward(src.ID); fw.Status != workflow.ForwardFailed || platform.Deref(fw.ErrorCode, "") != workflow.CodeLinkDeleted {
		t.Fatalf("forward of a deleted link: %s", describeForward(fw))
	}
	// The deleted link's forwards stay listed under it, for its account only.
	page, err := f.fwd.OfLink(f.ctx, acct, l.ID, platform.PageRequest{Limit: 10})
	if err != nil || len(page.Items) != 1 || *page.Items[0].ErrorCode != workflow.CodeLinkDeleted {
		t.Fatalf("forwards of the deleted link: %+v %v", page.Items, err)
	}
	if _, err := f.fwd.OfLink(f.ctx, "acc_other", l.ID, platform.PageRequest{Limit: 10}); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account: %v", err)
	}
	if _, err := f.fwd.OfLink(f.ctx, acct, "lnk_never", platform.PageRequest{Limit: 10}); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("a link that never was: %v", err)
	}
}

func TestAppointmentQueueCannotReceiveForwards(t *testing.T) {
	f := newFwdFixture(t)
	a, _ := f.queue("A")
	q, err := f.qs.Create(f.ctx, acct, queues.CreateInput{EntityID: &f.entity, Name: platform.Ptr("Clinic"), Type: platform.Ptr("APPOINTMENT")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.links.Create(f.ctx, acct, workflow.CreateInput{FromQueueDefinitionID: &a, ToQueueDefinitionID: &q.ID}); !platform.IsCode(err, workflow.CodeNotATurnQueue) {
		t.Fatalf("link into an APPOINTMENT queue: %v", err)
	}
}
