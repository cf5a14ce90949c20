package contract

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/analytics"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
)

// RunAnalytics runs the analytics.Repository contract: one day of known
// turns, forwards and appointments in two queues, and every figure
// checked, percentiles included.
func RunAnalytics(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	ptr := func(t time.Time) *time.Time { return &t }
	secs := func(f float64) *float64 { return &f }

	set := newSet(t)
	o := OwnersOf(set).Seed(t)
	q1, q2 := o.QueueID, o.QueueID2
	runs := map[string]string{}
	for _, q := range []string{q1, q2} {
		run := queues.Run{ID: platform.NewID(platform.PrefixRun), AccountID: o.AccountID, QueueID: q, Status: queues.RunOpen,
			IntakeOpen: true, OpenedAt: ptr(day), CreatedAt: day, UpdatedAt: day}
		if err := OwnersOf(set).Queues.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		runs[q] = run.ID
	}
	seq := int64(0)
	turn := func(q string, st turns.Status, created time.Time, called, finished *time.Time, service *float64) turns.Turn {
		seq++
		tu := turns.Turn{ID: platform.NewID(platform.PrefixTurn), AccountID: o.AccountID, QueueID: q, RunID: runs[q],
			Number: int(seq), DisplayCode: "x", Status: st, Priority: queues.PriorityNormal, Seq: seq, PeopleCount: 1,
			FormResponse: map[string]string{}, RequestHash: "x", CalledAt: called, FinishedAt: finished,
			ServiceSeconds: service, CreatedAt: created, UpdatedAt: created}
		if err := OwnersOf(set).Turns.Create(ctx, tu); err != nil {
			t.Fatal(err)
		}
		return tu
	}
	// Queue 1.
	t1 := turn(q1, turns.Completed, at(9, 0), ptr(at(9, 10)), ptr(at(9, 20)), secs(300))   // wait 600
	turn(q1, turns.Completed, at(9, 0), ptr(at(9, 30)), ptr(at(9, 40)), secs(600))         // wait 1800
	turn(q1, turns.NoShow, at(10, 0), ptr(at(10, 5)), ptr(at(10, 10)), nil)                // wait 300
	turn(q1, turns.Cancelled, at(10, 0), nil, ptr(at(10, 30)), nil)                        // never called
	turn(q1, turns.Completed, at(-1, 0), ptr(at(0, 10)), ptr(at(0, 20)), secs(900))        // taken the day before; wait 4200
	turn(q1, turns.Waiting, at(11, 0), nil, nil, nil)                                      // waits 3600 at noon
	turn(q1, turns.Called, at(11, 30), ptr(at(11, 40)), nil, nil)                          // wait 600
	turn(q1, turns.Waitlisted, at(11, 45), nil, nil, nil)                                  // waits 900 at noon
	turn(q1, turns.Completed, at(25, 0), ptr(at(25, 10)), ptr(at(25, 20)), secs(500))      // the next day: nowhere
	turn(q2, turns.Completed, at(9, 0), ptr(at(9, 20)), ptr(at(9, 30)), secs(100))         // wait 1200
	t0 := turn(q2, turns.Completed, at(-30, 0), ptr(at(-29, 0)), ptr(at(-28, 0)), secs(1)) // two days before

	fw := func(src turns.Turn, link, status string, when time.Time) {
		f := workflow.Forward{ID: platform.NewID(workflow.PrefixForward), AccountID: o.AccountID, LinkID: link,
			FromTurnID: src.ID, FromQueueID: src.QueueID, FromRunID: src.RunID, ToQueueID: q2, Trigger: workflow.TriggerComplete,
			Status: status, CreatedAt: when, UpdatedAt: when}
		if status == workflow.ForwardDone {
			f.ForwardedAt = &when
		}
		if _, err := set.Forwards.CreateForward(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	fw(t1, "lnk_a", workflow.ForwardDone, at(9, 25))
	fw(t1, "lnk_b", workflow.ForwardFailed, at(9, 25))
	fw(t0, "lnk_a", workflow.ForwardDone, at(-28, 0)) // before the window

	slot := appointments.Slot{ID: platform.NewID(platform.PrefixSlot), AccountID: o.AccountID, QueueID: q2, RunID: runs[q2],
		Date: "2026-03-01", Timezone: "UTC", Start: at(15, 0), End: at(15, 30), Capacity: 5, Remaining: 3, CreatedAt: at(-72, 0)}
	if err := set.Appointments.InsertSlots(ctx, []appointments.Slot{slot}); err != nil {
		t.Fatal(err)
	}
	appt := func(created time.Time, completed *time.Time) {
		a := appointments.Appointment{ID: platform.NewID(platform.PrefixAppointment), AccountID: o.AccountID, QueueID: q2,
			RunID: runs[q2], SlotID: slot.ID, SlotStart: slot.Start, SlotEnd: slot.End, Date: slot.Date,
			Status: appointments.StatusScheduled, FormResponse: map[string]string{}, RequestHash: "x",
			CreatedAt: created, UpdatedAt: created, CompletedAt: completed}
		if completed != nil {
			a.Status = appointments.StatusCompleted
		}
		if err := set.Appointments.CreateAppointment(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	appt(at(8, 0), ptr(at(9, 0)))
	appt(at(-48, 0), ptr(at(10, 0)))
	appt(at(7, 0), nil)

	windows := []analytics.Window{{QueueID: q1, From: day, To: at(24, 0)}, {QueueID: q2, From: day, To: at(24, 0)}}
	near := func(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-6 }
	checkDur := func(t *testing.T, what string, d analytics.Durations, n int, avg, p50, p90 float64) {
		t.Helper()
		if d.Count != n || !near(d.AverageSeconds, avg) || !near(d.P50Seconds, p50) || !near(d.P90Seconds, p90) {
			t.Errorf("%s: got n=%d avg=%v p50=%v p90=%v, want %d %v %v %v", what, d.Count, show(d.AverageSeconds),
				show(d.P50Seconds), show(d.P90Seconds), n, avg, p50, p90)
		}
	}

	t.Run("summary per queue and in total", func(t *testing.T) {
		per, total, err := set.Analytics.Summary(ctx, windows)
		if err != nil {
			t.Fatal(err)
		}
		s1, s2 := per[q1], per[q2]
		if s1.TurnsCreated != 7 || s1.Served != 3 || s1.NoShows != 1 || s1.Cancelled != 1 || s1.Forwarded != 1 ||
			s1.AppointmentsBooked != 0 || s1.AppointmentsCompleted != 0 {
			t.Errorf("queue 1 counts: %+v", s1)
		}
		checkDur(t, "queue 1 service", s1.Service, 3, 600, 600, 840)
		checkDur(t, "queue 1 wait", s1.Wait, 5, 1500, 600, 3240)
		if s2.TurnsCreated != 1 || s2.Served != 1 || s2.Forwarded != 0 || s2.AppointmentsBooked != 2 || s2.AppointmentsCompleted != 2 {
			t.Errorf("queue 2 counts: %+v", s2)
		}
		checkDur(t, "queue 2 service", s2.Service, 1, 100, 100, 100)
		checkDur(t, "queue 2 wait", s2.Wait, 1, 1200, 1200, 1200)
		if total.TurnsCreated != 8 || total.Served != 4 || total.NoShows != 1 || total.Cancelled != 1 || total.Forwarded != 1 ||
			total.AppointmentsBooked != 2 || total.AppointmentsCompleted != 2 {
			t.Errorf("total counts: %+v", total)
		}
		checkDur(t, "total service", total.Service, 4, 475, 450, 810)
		checkDur(t, "total wait", total.Wait, 6, 1450, 900, 3000)
	})

	t.Run("a window without activity has zeros and nulls", func(t *testing.T) {
		empty := []analytics.Window{{QueueID: q1, From: at(48, 0), To: at(72, 0)}}
		per, total, err := set.Analytics.Summary(ctx, empty)
		if err != nil {
			t.Fatal(err)
		}
		if s := per[q1]; s.TurnsCreated != 0 || s.Served != 0 || s.Wait.Count != 0 || s.Wait.AverageSeconds != nil || s.Service.P90Seconds != nil {
			t.Errorf("empty window: %+v", s)
		}
		if total.Wait.AverageSeconds != nil || total.TurnsCreated != 0 {
			t.Errorf("empty total: %+v", total)
		}
	})

	t.Run("live", func(t *testing.T) {
		live, today, err := set.Analytics.Live(ctx, windows, at(12, 0))
		if err != nil {
			t.Fatal(err)
		}
		l1 := live[q1]
		if l1.Waiting != 1 || l1.Waitlisted != 1 || l1.Called != 1 || l1.Held != 0 || l1.InService != 0 ||
			!near(l1.AverageWaitSeconds, 2250) || !near(l1.LongestWaitSeconds, 3600) {
			t.Errorf("queue 1 live: %+v avg=%v max=%v", l1, show(l1.AverageWaitSeconds), show(l1.LongestWaitSeconds))
		}
		if l2 := live[q2]; l2.Waiting != 0 || l2.AverageWaitSeconds != nil || l2.LongestWaitSeconds != nil {
			t.Errorf("queue 2 live: %+v", l2)
		}
		if s := today[q1]; s.Served != 3 || s.NoShows != 1 || !near(s.Service.AverageSeconds, 600) {
			t.Errorf("queue 1 today: %+v", s)
		}
	})
}

func show(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
