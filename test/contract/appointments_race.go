package contract

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/platform"
)

// aptRace runs n calls of f at once (released together) and returns their
// errors, in call order.
func aptRace(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := 0; i < n; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			errs[i] = f(i)
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// aptTally counts errors by code ("" for success).
func aptTally(t *testing.T, errs []error) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, err := range errs {
		switch e, ok := platform.AsError(err); {
		case err == nil:
			out[""]++
		case ok:
			out[e.Code]++
		default:
			t.Fatalf("an infrastructure error under contention: %v", err)
		}
	}
	return out
}

// aptActive counts the slot's appointments that hold a seat (every status
// but CANCELLED).
func aptActive(t *testing.T, st *aptStack, runID, slotID string) int {
	t.Helper()
	n := 0
	page := platform.PageRequest{Limit: platform.MaxPageLimit}
	for {
		p, err := st.svc.List(context.Background(), st.account, runID, appointments.ListFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Items {
			if a.SlotID == slotID && a.Status != appointments.StatusCancelled {
				n++
			}
		}
		if p.Next == "" {
			return n
		}
		page.After = p.Next
	}
}

// RunAppointmentRaces proves the capacity rules under concurrent use
// cases: on Postgres, where several processes would share them, and on
// memory, which must behave the same.
func RunAppointmentRaces(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	newStack := aptStacks(newSet)
	t.Run("100 bookings of one slot of capacity 5", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "09:30", 30, 5)[0]
		errs := aptRace(100, func(i int) error {
			_, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{SlotID: &s.ID})
			return err
		})
		got := aptTally(t, errs)
		if got[""] != 5 || got[appointments.CodeSlotFull] != 95 || len(got) != 2 {
			t.Fatalf("outcomes %v, want 5 bookings and 95 SLOT_FULL", got)
		}
		if r := st.slot(t, s.ID).Remaining; r != 0 {
			t.Fatalf("remaining %d, want 0", r)
		}
		if n := aptActive(t, st, run.ID, s.ID); n != 5 {
			t.Fatalf("%d appointments, want 5", n)
		}
	})

	t.Run("concurrent next-available bookings fill slots in order", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "11:30", 30, 3) // 5 slots, 15 seats
		errs := aptRace(12, func(int) error {
			_, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{})
			return err
		})
		if got := aptTally(t, errs); got[""] != 12 {
			t.Fatalf("outcomes %v, want 12 bookings", got)
		}
		var remaining []int
		for _, sl := range s {
			remaining = append(remaining, st.slot(t, sl.ID).Remaining)
		}
		if fmt.Sprint(remaining) != "[0 0 0 0 3]" {
			t.Fatalf("remaining per slot %v, want [0 0 0 0 3]: the first four filled, the last untouched", remaining)
		}
		// 20 more for the last 3 seats.
		errs = aptRace(20, func(int) error {
			_, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{})
			return err
		})
		if got := aptTally(t, errs); got[""] != 3 || got[appointments.CodeNoSlotAvailable] != 17 {
			t.Fatalf("outcomes %v, want 3 bookings and 17 NO_SLOT_AVAILABLE", got)
		}
		for _, sl := range s {
			if r := st.slot(t, sl.ID).Remaining; r != 0 {
				t.Fatalf("slot %s remaining %d", sl.ID, r)
			}
			if n := aptActive(t, st, run.ID, sl.ID); n != 3 {
				t.Fatalf("slot %s holds %d appointments, capacity 3", sl.ID, n)
			}
		}
	})

	t.Run("cancels and bookings racing on a full slot", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "09:30", 30, 5)[0]
		for round := 0; round < 3; round++ {
			// Fill the slot, then cancel every appointment while 20
			// bookings try to get in.
			var held []string
			for {
				a, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{SlotID: &s.ID})
				if platform.IsCode(err, appointments.CodeSlotFull) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, a.ID)
			}
			errs := aptRace(len(held)+20, func(i int) error {
				if i < len(held) {
					_, err := st.svc.Cancel(ctx, st.account, held[i])
					return err
				}
				_, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{SlotID: &s.ID})
				return err
			})
			for i, err := range errs[:len(held)] {
				if err != nil {
					t.Fatalf("cancel %d: %v", i, err)
				}
			}
			got := aptTally(t, errs[len(held):])
			if got[""]+got[appointments.CodeSlotFull] != 20 || got[""] > len(held) {
				t.Fatalf("round %d: booking outcomes %v after %d cancels", round, got, len(held))
			}
			r, active := st.slot(t, s.ID).Remaining, aptActive(t, st, run.ID, s.ID)
			if r < 0 || active > 5 || r != 5-active {
				t.Fatalf("round %d: remaining %d with %d active appointments on capacity 5", round, r, active)
			}
		}
	})

	t.Run("one idempotency key sent 20 times at once", func(t *testing.T) {
		st := newStack(t)
		run := st.run(t)
		s := st.slots(t, run.ID, "2026-03-08", "09:00", "09:30", 30, 5)[0]
		ids := make([]string, 20)
		errs := aptRace(20, func(i int) error {
			a, err := st.svc.Schedule(ctx, st.account, run.ID, appointments.ScheduleInput{IdempotencyKey: platform.Ptr("retry-storm-1")})
			ids[i] = a.ID
			return err
		})
		if got := aptTally(t, errs); got[""] != 20 {
			t.Fatalf("outcomes %v, want 20 answers", got)
		}
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("one key made two appointments: %s and %s", ids[0], id)
			}
		}
		if r := st.slot(t, s.ID).Remaining; r != 4 {
			t.Fatalf("remaining %d, want 4: one seat for one key", r)
		}
	})
}
