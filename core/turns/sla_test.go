package turns_test

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// slaJobs returns the SLA jobs scheduled for a turn.
func slaJobs(f *fixture, turnID string) []platform.Job {
	var out []platform.Job
	for _, j := range f.jobs.All() {
		if a, ok := j.Args.(turns.SLAArgs); ok && j.Kind == turns.SLAJobKind && a.TurnID == turnID {
			out = append(out, j)
		}
	}
	return out
}

func breaches(f *fixture, turnID string) []platform.Event {
	var out []platform.Event
	for _, e := range f.eventsOf(turnID) {
		if e.Name == turns.EventSLABreached {
			out = append(out, e)
		}
	}
	return out
}

// TestSLAWaitBreachRaisesOnce: a turn taken in a queue with
// sla.maxWaitMinutes gets a job at the moment the target passes; still
// waiting then, turn.sla_breached is raised, once however often the job
// runs; a turn called in time raises nothing; a target raised meanwhile
// moves the job, one removed raises nothing; a queue without the target
// schedules no job.
func TestSLAWaitBreachRaisesOnce(t *testing.T) {
	f := newFixture(t)
	q, run := f.queue(queues.CreateInput{SLA: &queues.SLA{MaxWaitMinutes: platform.Ptr(10)}})
	late := f.take(run, turns.CreateInput{})
	served := f.take(run, turns.CreateInput{})
	jobs := slaJobs(f, late.ID)
	if len(jobs) != 1 || !jobs[0].RunAt.Equal(late.CreatedAt.Add(10*time.Minute)) {
		t.Fatalf("jobs %+v, want one at taking + 10 min", jobs)
	}
	// The line moves: the second is called out of turn, in time.
	must(t)(f.svc.Call(f.ctx, account, served.ID, turns.CallInput{}))
	f.clock.Advance(10 * time.Minute)
	for range 2 {
		for _, id := range []string{late.ID, served.ID} {
			if err := f.svc.CheckSLA(f.ctx, turns.SLAArgs{TurnID: id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := breaches(f, late.ID)
	if len(got) != 1 {
		t.Fatalf("a turn waiting past the target, its job run twice: %d events, want 1", len(got))
	}
	var d turns.TurnSLABreached
	if err := got[0].Decode(&d); err != nil || d.TurnID != late.ID || d.MaxWaitMinutes != 10 || d.Status != "WAITING" ||
		d.DisplayCode != late.DisplayCode || !d.WaitingSince.Equal(late.CreatedAt) || got[0].RunID != run || got[0].QueueID != q.ID {
		t.Fatalf("event %s (%v)", got[0].Data, err)
	}
	if n := len(breaches(f, served.ID)); n != 0 {
		t.Fatalf("a turn called in time raised %d", n)
	}

	// Raised to 30 minutes: the job at 10 finds it early and moves.
	moved := f.take(run, turns.CreateInput{})
	if _, err := f.queues.SetSLA(f.ctx, account, q.ID, queues.SLAInput{MaxWaitMinutes: platform.Ptr(30)}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(10 * time.Minute)
	if err := f.svc.CheckSLA(f.ctx, turns.SLAArgs{TurnID: moved.ID}); err != nil {
		t.Fatal(err)
	}
	if n := len(breaches(f, moved.ID)); n != 0 {
		t.Fatalf("raised before the raised target: %d", n)
	}
	if jobs := slaJobs(f, moved.ID); len(jobs) != 2 || !jobs[1].RunAt.Equal(moved.CreatedAt.Add(30*time.Minute)) {
		t.Fatalf("jobs %+v, want the job moved to taking + 30 min", jobs)
	}
	// Removed: nothing.
	if _, err := f.queues.SetSLA(f.ctx, account, q.ID, queues.SLAInput{}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(30 * time.Minute)
	if err := f.svc.CheckSLA(f.ctx, turns.SLAArgs{TurnID: moved.ID}); err != nil {
		t.Fatal(err)
	}
	if n := len(breaches(f, moved.ID)); n != 0 {
		t.Fatalf("raised with no target: %d", n)
	}
	// No target, no job.
	_, plain := f.queue(queues.CreateInput{})
	if v := f.take(plain, turns.CreateInput{}); len(slaJobs(f, v.ID)) != 0 {
		t.Fatal("a queue without sla.maxWaitMinutes scheduled an SLA job")
	}
}
