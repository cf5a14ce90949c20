package memory

import (
	"context"
	"sort"
	"time"

	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/platform"
)

// Appointments is the memory appointments.Repository. Every seat operation
// reads and writes under the store's lock in one step, and units of work
// are serialised, so concurrent bookings behave as on Postgres: a slot is
// never overbooked and next-available fills slots in order.
type Appointments struct {
	s     *Store
	slots *table[appointments.Slot]
	appts *table[appointments.Appointment]
	// keys maps account + idempotency key to the appointment id: the
	// memory counterpart of the unique index.
	keys *table[string]
}

// NewAppointments builds the repository on s; deleting a run (and so a
// queue or an entity) deletes its slots and appointments.
func NewAppointments(s *Store) *Appointments {
	r := &Appointments{s: s, slots: newTable[appointments.Slot](s), appts: newTable[appointments.Appointment](s), keys: newTable[string](s)}
	s.OnDelete("run", func(ctx context.Context, runID string) {
		for _, a := range sorted(r.appts.rows, "", 0, func(a appointments.Appointment) bool { return a.RunID == runID }) {
			r.s.write(ctx, func() func() { return r.appts.del(a.ID) })
			if a.IdempotencyKey != nil {
				r.s.write(ctx, func() func() { return r.keys.del(aptKeyOf(a.AccountID, *a.IdempotencyKey)) })
			}
		}
		for _, sl := range sorted(r.slots.rows, "", 0, func(sl appointments.Slot) bool { return sl.RunID == runID }) {
			r.s.write(ctx, func() func() { return r.slots.del(sl.ID) })
		}
	})
	return r
}

func aptKeyOf(accountID, key string) string { return accountID + "\x00" + key }

// InsertSlots stores new slots.
func (r *Appointments) InsertSlots(ctx context.Context, slots []appointments.Slot) error {
	for _, sl := range slots {
		r.s.write(ctx, func() func() { return r.slots.put(sl.ID, sl) })
	}
	return nil
}

// GetSlot returns a slot.
func (r *Appointments) GetSlot(ctx context.Context, id string) (sl appointments.Slot, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if sl, ok = r.slots.rows[id]; !ok {
			err = platform.NotFound("slot", id)
		}
	})
	return sl, err
}

// runSlots returns the run's slots that pass keep, by start then id; called
// under the store's lock.
func (r *Appointments) runSlots(runID string, keep func(appointments.Slot) bool) []appointments.Slot {
	var out []appointments.Slot
	for _, sl := range r.slots.rows {
		if sl.RunID == runID && (keep == nil || keep(sl)) {
			out = append(out, sl)
		}
	}
	sort.Slice(out, func(i, j int) bool { return aptSlotLess(out[i], out[j]) })
	return out
}

func aptSlotLess(a, b appointments.Slot) bool {
	if !a.Start.Equal(b.Start) {
		return a.Start.Before(b.Start)
	}
	return a.ID < b.ID
}

// FirstOverlap returns the earliest slot of the run meeting [start, end).
func (r *Appointments) FirstOverlap(ctx context.Context, runID string, start, end time.Time) (sl appointments.Slot, found bool, err error) {
	r.s.read(ctx, func() {
		hits := r.runSlots(runID, func(s appointments.Slot) bool { return s.Start.Before(end) && s.End.After(start) })
		if len(hits) > 0 {
			sl, found = hits[0], true
		}
	})
	return sl, found, nil
}

// ListSlots pages a run's slots by start then id.
func (r *Appointments) ListSlots(ctx context.Context, runID string, f appointments.SlotFilter, page platform.PageRequest) (out []appointments.Slot, err error) {
	afterStart, afterID, err := appointments.PageAfter(page)
	if err != nil {
		return nil, err
	}
	r.s.read(ctx, func() {
		out = r.runSlots(runID, func(s appointments.Slot) bool {
			if page.After != "" && !aptAfter(s.Start, s.ID, afterStart, afterID) {
				return false
			}
			if f.Available && !s.Bookable(f.Now) {
				return false
			}
			return f.Date == "" || s.Date == f.Date
		})
	})
	if len(out) > page.Limit+1 {
		out = out[:page.Limit+1]
	}
	return out, nil
}

// aptAfter reports whether (t, id) sorts after (afterT, afterID).
func aptAfter(t time.Time, id string, afterT time.Time, afterID string) bool {
	return t.After(afterT) || (t.Equal(afterT) && id > afterID)
}

// TakeSeat takes a seat of the slot when it has one left.
func (r *Appointments) TakeSeat(ctx context.Context, slotID string) (sl appointments.Slot, ok bool, err error) {
	r.s.write(ctx, func() func() {
		cur, exists := r.slots.rows[slotID]
		if !exists {
			err = platform.NotFound("slot", slotID)
			return nil
		}
		sl = cur
		if cur.Remaining <= 0 {
			return nil
		}
		sl.Remaining--
		ok = true
		return r.slots.put(slotID, sl)
	})
	return sl, ok, err
}

// TakeNextSeat takes a seat of the run's earliest bookable slot.
func (r *Appointments) TakeNextSeat(ctx context.Context, runID string, now time.Time) (sl appointments.Slot, ok bool, err error) {
	r.s.write(ctx, func() func() {
		open := r.runSlots(runID, func(s appointments.Slot) bool { return s.Bookable(now) })
		if len(open) == 0 {
			return nil
		}
		sl = open[0]
		sl.Remaining--
		ok = true
		return r.slots.put(sl.ID, sl)
	})
	return sl, ok, nil
}

// ReturnSeat gives a seat back, never beyond the capacity.
func (r *Appointments) ReturnSeat(ctx context.Context, slotID string) (err error) {
	r.s.write(ctx, func() func() {
		sl, exists := r.slots.rows[slotID]
		if !exists {
			err = platform.NotFound("slot", slotID)
			return nil
		}
		if sl.Remaining >= sl.Capacity {
			return nil
		}
		sl.Remaining++
		return r.slots.put(slotID, sl)
	})
	return err
}

// CreateAppointment stores a new appointment, refusing a key the account
// already used.
func (r *Appointments) CreateAppointment(ctx context.Context, a appointments.Appointment) (err error) {
	r.s.write(ctx, func() func() {
		if a.IdempotencyKey == nil {
			return r.appts.put(a.ID, a)
		}
		k := aptKeyOf(a.AccountID, *a.IdempotencyKey)
		if _, taken := r.keys.rows[k]; taken {
			err = appointments.ErrIdempotencyKeyTaken
			return nil
		}
		undoKey, undoRow := r.keys.put(k, a.ID), r.appts.put(a.ID, a)
		return func() { undoRow(); undoKey() }
	})
	return err
}

// GetAppointment returns an appointment.
func (r *Appointments) GetAppointment(ctx context.Context, id string) (a appointments.Appointment, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if a, ok = r.appts.rows[id]; !ok {
			err = platform.NotFound("appointment", id)
		}
	})
	return a, err
}

// GetAppointmentForUpdate is GetAppointment: memory units of work are
// serialised.
func (r *Appointments) GetAppointmentForUpdate(ctx context.Context, id string) (appointments.Appointment, error) {
	return r.GetAppointment(ctx, id)
}

// FindByIdempotencyKey returns the account's appointment made with key.
func (r *Appointments) FindByIdempotencyKey(ctx context.Context, accountID, key string) (a appointments.Appointment, found bool, err error) {
	r.s.read(ctx, func() {
		if id, ok := r.keys.rows[aptKeyOf(accountID, key)]; ok {
			a, found = r.appts.rows[id]
		}
	})
	return a, found, nil
}

// UpdateAppointment replaces an appointment.
func (r *Appointments) UpdateAppointment(ctx context.Context, a appointments.Appointment) error {
	r.s.write(ctx, func() func() { return r.appts.put(a.ID, a) })
	return nil
}

// ListAppointments pages a run's appointments by slot start then id.
func (r *Appointments) ListAppointments(ctx context.Context, runID string, f appointments.ListFilter, page platform.PageRequest) (out []appointments.Appointment, err error) {
	afterStart, afterID, err := appointments.PageAfter(page)
	if err != nil {
		return nil, err
	}
	r.s.read(ctx, func() {
		for _, a := range r.appts.rows {
			if a.RunID != runID || (f.Status != "" && a.Status != f.Status) || (f.Date != "" && a.Date != f.Date) {
				continue
			}
			if page.After != "" && !aptAfter(a.SlotStart, a.ID, afterStart, afterID) {
				continue
			}
			out = append(out, a)
		}
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].SlotStart.Equal(out[j].SlotStart) {
			return out[i].SlotStart.Before(out[j].SlotStart)
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > page.Limit+1 {
		out = out[:page.Limit+1]
	}
	return out, nil
}

// RunsJoining lists the runs with appointments waiting to join at now.
func (r *Appointments) RunsJoining(ctx context.Context, now time.Time) (out []string, err error) {
	seen := map[string]bool{}
	r.s.read(ctx, func() {
		for _, a := range r.appts.rows {
			if a.JoinsLineAt != nil && !a.JoinsLineAt.After(now) && !seen[a.RunID] {
				seen[a.RunID] = true
				out = append(out, a.RunID)
			}
		}
	})
	sort.Strings(out)
	return out, nil
}

// CountJoining counts the run's appointments waiting to join its line at
// now.
func (r *Appointments) CountJoining(ctx context.Context, runID string, now time.Time) (int, error) {
	out, err := r.Joining(ctx, runID, now)
	return len(out), err
}

// Joining returns the run's appointments waiting to join its line at now
// (JoinsLineAt reached), in the order they join.
func (r *Appointments) Joining(ctx context.Context, runID string, now time.Time) (out []appointments.Appointment, err error) {
	r.s.read(ctx, func() {
		for _, a := range r.appts.rows {
			if a.RunID == runID && a.JoinsLineAt != nil && !a.JoinsLineAt.After(now) {
				out = append(out, a)
			}
		}
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].JoinsLineAt.Equal(*out[j].JoinsLineAt) {
			return out[i].JoinsLineAt.Before(*out[j].JoinsLineAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// eachAppointment calls f with each stored appointment; the caller holds
// the store's lock. It is the narrow reading analytics has of this
// repository's table.
func (r *Appointments) eachAppointment(f func(appointments.Appointment)) {
	for _, a := range r.appts.rows {
		f(a)
	}
}
