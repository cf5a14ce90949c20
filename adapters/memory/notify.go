package memory

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
)

// Notify is the memory notify.Repository.
type Notify struct {
	s        *Store
	turns    *Turns
	appts    *Appointments
	messages *table[notify.Message]
	keys     *table[string]           // message key → id
	supp     *table[time.Time]        // account|phone → since
	near     *table[notify.NearState] // by turn
	settings *table[notify.QueueSettings]
}

// NewNotify builds the repository on s; a run's messages and states go
// with it. It clears the phones of tr's finished turns and ap's finished
// appointments.
func NewNotify(s *Store, tr *Turns, ap *Appointments) *Notify {
	r := &Notify{s: s, turns: tr, appts: ap, messages: newTable[notify.Message](s), keys: newTable[string](s), supp: newTable[time.Time](s),
		near: newTable[notify.NearState](s), settings: newTable[notify.QueueSettings](s)}
	s.OnDelete("run", func(ctx context.Context, runID string) {
		r.s.write(ctx, func() func() {
			var undo []func()
			for id, m := range r.messages.rows {
				if m.RunID == runID {
					undo = append(undo, r.messages.del(id), r.keys.del(m.Key()), r.near.del(m.TurnID))
				}
			}
			return func() {
				for i := len(undo) - 1; i >= 0; i-- {
					undo[i]()
				}
			}
		})
	})
	s.OnDelete("queue", func(ctx context.Context, queueID string) {
		r.s.write(ctx, func() func() { return r.settings.del(queueID) })
	})
	return r
}

func copyMessage(m notify.Message) notify.Message {
	m.Params = maps.Clone(m.Params)
	m.ProviderMessageID, m.ErrorCode, m.Error = clonePtr(m.ProviderMessageID), clonePtr(m.ErrorCode), clonePtr(m.Error)
	m.FallbackOf, m.SentAt = clonePtr(m.FallbackOf), clonePtr(m.SentAt)
	return m
}

// Insert stores m unless its key is taken.
func (r *Notify) Insert(ctx context.Context, m notify.Message) (ok bool, err error) {
	m = copyMessage(m)
	r.s.write(ctx, func() func() {
		if _, taken := r.keys.rows[m.Key()]; taken {
			return nil
		}
		ok = true
		u1, u2 := r.messages.put(m.ID, m), r.keys.put(m.Key(), m.ID)
		return func() { u2(); u1() }
	})
	return ok, nil
}

// Get returns a message.
func (r *Notify) Get(ctx context.Context, id string) (m notify.Message, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if m, ok = r.messages.rows[id]; !ok {
			err = platform.NotFound("notification", id)
		}
		m = copyMessage(m)
	})
	return m, err
}

// GetForUpdate is Get: the unit of work holds the store's lock.
func (r *Notify) GetForUpdate(ctx context.Context, id string) (notify.Message, error) {
	return r.Get(ctx, id)
}

// Update stores m.
func (r *Notify) Update(ctx context.Context, m notify.Message) error {
	m = copyMessage(m)
	r.s.write(ctx, func() func() { return r.messages.put(m.ID, m) })
	return nil
}

// ByProviderID finds a message by its provider's id.
func (r *Notify) ByProviderID(ctx context.Context, provider, id string) (m notify.Message, err error) {
	err = platform.NotFound("notification", id)
	r.s.read(ctx, func() {
		for _, x := range r.messages.rows {
			if x.Provider == provider && x.ProviderMessageID != nil && *x.ProviderMessageID == id {
				m, err = copyMessage(x), nil
				return
			}
		}
	})
	return m, err
}

// ListByTurn lists a turn's messages, oldest first.
func (r *Notify) ListByTurn(ctx context.Context, turnID string) ([]notify.Message, error) {
	return r.list(ctx, func(m notify.Message) bool { return m.TurnID == turnID }), nil
}

// ListByAppointment lists an appointment's messages, oldest first.
func (r *Notify) ListByAppointment(ctx context.Context, appointmentID string) ([]notify.Message, error) {
	return r.list(ctx, func(m notify.Message) bool { return m.AppointmentID == appointmentID }), nil
}

func (r *Notify) list(ctx context.Context, keep func(notify.Message) bool) (out []notify.Message) {
	r.s.read(ctx, func() {
		for _, m := range r.messages.rows {
			if keep(m) {
				out = append(out, copyMessage(m))
			}
		}
	})
	slices.SortFunc(out, func(a, b notify.Message) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// LatestTo is the newest message to phone.
func (r *Notify) LatestTo(ctx context.Context, phone string) (m notify.Message, err error) {
	found := false
	r.s.read(ctx, func() {
		for _, x := range r.messages.rows {
			if x.To == phone && (!found || x.CreatedAt.After(m.CreatedAt) || x.CreatedAt.Equal(m.CreatedAt) && x.ID > m.ID) {
				m, found = x, true
			}
		}
	})
	if !found {
		return m, platform.NotFound("notification", phone)
	}
	return copyMessage(m), nil
}

// SetSuppressed adds phone to, or takes it off, the account's list.
func (r *Notify) SetSuppressed(ctx context.Context, accountID, phone string, on bool, at time.Time) error {
	k := accountID + "|" + phone
	r.s.write(ctx, func() func() {
		if on {
			if _, ok := r.supp.rows[k]; ok {
				return nil
			}
			return r.supp.put(k, at)
		}
		return r.supp.del(k)
	})
	return nil
}

// Suppressed reports whether phone is on the account's list.
func (r *Notify) Suppressed(ctx context.Context, accountID, phone string) (ok bool, err error) {
	r.s.read(ctx, func() { _, ok = r.supp.rows[accountID+"|"+phone] })
	return ok, nil
}

// Near returns a turn's near-the-front state (zero for none).
func (r *Notify) Near(ctx context.Context, turnID string) (s notify.NearState, err error) {
	r.s.read(ctx, func() { s = r.near.rows[turnID] })
	return s, nil
}

// PutNear stores a turn's near-the-front state.
func (r *Notify) PutNear(ctx context.Context, s notify.NearState) error {
	r.s.write(ctx, func() func() { return r.near.put(s.TurnID, s) })
	return nil
}

// QueueSettings returns a queue's settings, if it set any.
func (r *Notify) QueueSettings(ctx context.Context, queueID string) (s notify.QueueSettings, ok bool, err error) {
	r.s.read(ctx, func() { s, ok = r.settings.rows[queueID] })
	return s, ok, nil
}

// PutQueueSettings stores a queue's settings.
func (r *Notify) PutQueueSettings(ctx context.Context, _, queueID string, s notify.QueueSettings) error {
	r.s.write(ctx, func() func() { return r.settings.put(queueID, s) })
	return nil
}

// ClearPhones forgets the numbers of messages created before cutoff,
// but for those still QUEUED.
func (r *Notify) ClearPhones(ctx context.Context, before time.Time, limit int) (n int, err error) {
	r.s.write(ctx, func() func() {
		var undo []func()
		for id, m := range r.messages.rows {
			if n >= limit {
				break
			}
			if m.To != "" && m.CreatedAt.Before(before) && m.Status != notify.StatusQueued {
				m.To = ""
				undo = append(undo, r.messages.put(id, m))
				n++
			}
		}
		return func() {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	})
	return n, nil
}

// ClearTurnPhones forgets the phones of turns finished before cutoff.
func (r *Notify) ClearTurnPhones(ctx context.Context, finishedBefore time.Time, limit int) (n int, err error) {
	r.s.write(ctx, func() func() {
		var undo []func()
		for _, t := range r.turns.turns.rows {
			if n >= limit {
				break
			}
			if t.Phone != nil && t.FinishedAt != nil && t.FinishedAt.Before(finishedBefore) {
				t = cloneTurn(t)
				t.Phone = nil
				undo = append(undo, r.turns.turns.put(t))
				n++
			}
		}
		return func() {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	})
	return n, nil
}

// ClearAppointmentPhones forgets the phones of appointments finished
// before cutoff.
func (r *Notify) ClearAppointmentPhones(ctx context.Context, finishedBefore time.Time, limit int) (n int, err error) {
	r.s.write(ctx, func() func() {
		var undo []func()
		for id, a := range r.appts.appts.rows {
			if n >= limit {
				break
			}
			end := a.CompletedAt
			if end == nil {
				end = a.CancelledAt
			}
			if end == nil {
				end = a.NoShowAt
			}
			if a.Phone != nil && end != nil && end.Before(finishedBefore) {
				a.Phone = nil
				undo = append(undo, r.appts.appts.put(id, a))
				n++
			}
		}
		return func() {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	})
	return n, nil
}
