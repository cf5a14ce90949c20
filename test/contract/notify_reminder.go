package contract

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
)

// reminderMsg is a QUEUED reminder of appointment id for the slot that
// starts at slot, made at now.
func reminderMsg(now, slot time.Time, o Owned, appointmentID, runID string) notify.Message {
	return notify.Message{ID: platform.NewID(notify.PrefixMessage), AccountID: o.AccountID, AppointmentID: appointmentID,
		QueueID: o.QueueID, RunID: runID, Moment: notify.MomentReminder, Occurrence: 1, Channel: notify.ChannelSMS,
		To: "+34600111222", Language: "en",
		Params: map[string]string{"queue": "Clinic", "time": "10:00", "slotStart": slot.UTC().Format(time.RFC3339)},
		Status: notify.StatusQueued, CreatedAt: now, UpdatedAt: now}
}

// runNotifyReminder is the appointment reminder's part of RunNotify: a
// message of an appointment (no turn) stores and lists by its
// appointment, keyed by the appointment and its slot's start; concurrent
// decisions of one reminder store one.
func runNotifyReminder(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	slot := now.Add(2 * time.Hour)
	t.Run("an appointment's reminder: one per appointment and slot, listed by its appointment", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		m := reminderMsg(now, slot, o, "apt_contract_1", tu.RunID)
		if ok, err := set.Notify.Insert(ctx, m); err != nil || !ok {
			t.Fatalf("insert: %v %v", ok, err)
		}
		if ok, err := set.Notify.Insert(ctx, reminderMsg(now, slot, o, "apt_contract_1", tu.RunID)); err != nil || ok {
			t.Fatalf("a second reminder of the appointment and slot was stored: %v %v", ok, err)
		}
		other := reminderMsg(now, slot.Add(time.Hour), o, "apt_contract_1", tu.RunID)
		if ok, err := set.Notify.Insert(ctx, other); err != nil || !ok {
			t.Fatalf("the reminder of another slot: %v %v", ok, err)
		}
		got, err := set.Notify.Get(ctx, m.ID)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("stored %+v, read back %+v (%v)", m, got, err)
		}
		list, err := set.Notify.ListByAppointment(ctx, "apt_contract_1")
		if err != nil || len(list) != 2 || list[0].ID != m.ID && list[1].ID != m.ID {
			t.Fatalf("by appointment: %+v %v", list, err)
		}
		if list, err := set.Notify.ListByAppointment(ctx, "apt_contract_2"); err != nil || len(list) != 0 {
			t.Fatalf("another appointment's list: %+v %v", list, err)
		}
		if list, err := set.Notify.ListByTurn(ctx, tu.ID); err != nil || len(list) != 0 {
			t.Fatalf("a turn lists an appointment's reminder: %+v %v", list, err)
		}
	})
	t.Run("finished appointments forget their phone after the cutoff, the others keep it", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		start := now.Add(-72 * time.Hour)
		slot := appointments.Slot{ID: platform.NewID(platform.PrefixSlot), AccountID: o.AccountID, QueueID: o.QueueID, RunID: tu.RunID,
			Date: start.Format(time.DateOnly), Timezone: "UTC", Start: start, End: start.Add(time.Hour), Capacity: 10, Remaining: 6,
			CreatedAt: start}
		if err := set.UoW.Do(ctx, func(ctx context.Context) error { return set.Appointments.InsertSlots(ctx, []appointments.Slot{slot}) }); err != nil {
			t.Fatal(err)
		}
		old, late := now.Add(-48*time.Hour), now.Add(-time.Hour)
		mk := func(status appointments.Status, at *time.Time) appointments.Appointment {
			a := appointments.Appointment{ID: platform.NewID(platform.PrefixAppointment), AccountID: o.AccountID, QueueID: o.QueueID,
				RunID: tu.RunID, SlotID: slot.ID, SlotStart: slot.Start, SlotEnd: slot.End, Date: slot.Date, Status: status,
				Phone: platform.Ptr("+34600111222"), FormResponse: map[string]string{}, RequestHash: "x", CreatedAt: start, UpdatedAt: start}
			switch status {
			case appointments.StatusCompleted:
				a.CompletedAt = at
			case appointments.StatusCancelled:
				a.CancelledAt = at
			case appointments.StatusNoShow:
				a.NoShowAt = at
			}
			if err := set.UoW.Do(ctx, func(ctx context.Context) error { return set.Appointments.CreateAppointment(ctx, a) }); err != nil {
				t.Fatal(err)
			}
			return a
		}
		completed, cancelled, noShow := mk(appointments.StatusCompleted, &old), mk(appointments.StatusCancelled, &old), mk(appointments.StatusNoShow, &old)
		recent, scheduled := mk(appointments.StatusCancelled, &late), mk(appointments.StatusScheduled, nil)
		var n int
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			var err error
			n, err = set.Notify.ClearAppointmentPhones(ctx, now.Add(-24*time.Hour), 100)
			return err
		})
		if err != nil || n != 3 {
			t.Fatalf("cleared %d (%v), want 3", n, err)
		}
		for id, want := range map[string]bool{completed.ID: false, cancelled.ID: false, noShow.ID: false, recent.ID: true, scheduled.ID: true} {
			got, err := set.Appointments.GetAppointment(ctx, id)
			if err != nil || (got.Phone != nil) != want {
				t.Errorf("appointment %s (%s): phone %v, want kept %v (%v)", id, got.Status, got.Phone, want, err)
			}
		}
	})
	t.Run("concurrent decisions of one reminder store one message", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		var wg sync.WaitGroup
		var mu sync.Mutex
		stored := 0
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := set.UoW.Do(ctx, func(ctx context.Context) error {
					ok, err := set.Notify.Insert(ctx, reminderMsg(now, slot, o, "apt_contract_race", tu.RunID))
					if ok {
						mu.Lock()
						stored++
						mu.Unlock()
					}
					return err
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if stored != 1 {
			t.Fatalf("%d of 8 concurrent decisions stored a reminder", stored)
		}
	})
}
