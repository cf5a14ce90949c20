package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/platform"
)

type slotRow struct {
	bun.BaseModel `bun:"table:appointment_slots"`
	ID            string    `bun:"id,pk"`
	AccountID     string    `bun:"account_id"`
	QueueID       string    `bun:"queue_id"`
	RunID         string    `bun:"run_id"`
	LocalDate     string    `bun:"local_date"`
	Timezone      string    `bun:"timezone"`
	StartsAt      time.Time `bun:"starts_at"`
	EndsAt        time.Time `bun:"ends_at"`
	Capacity      int       `bun:"capacity"`
	Remaining     int       `bun:"remaining"`
	CreatedAt     time.Time `bun:"created_at"`
}

func (row slotRow) domain() appointments.Slot {
	return appointments.Slot{ID: row.ID, AccountID: row.AccountID, QueueID: row.QueueID, RunID: row.RunID,
		Date: row.LocalDate, Timezone: row.Timezone, Start: row.StartsAt.UTC(), End: row.EndsAt.UTC(),
		Capacity: row.Capacity, Remaining: row.Remaining, CreatedAt: row.CreatedAt.UTC()}
}

type appointmentRow struct {
	bun.BaseModel  `bun:"table:appointments"`
	ID             string       `bun:"id,pk"`
	AccountID      string       `bun:"account_id"`
	QueueID        string       `bun:"queue_id"`
	RunID          string       `bun:"run_id"`
	SlotID         string       `bun:"slot_id"`
	SlotStart      time.Time    `bun:"slot_start"`
	SlotEnd        time.Time    `bun:"slot_end"`
	LocalDate      string       `bun:"local_date"`
	Status         string       `bun:"status"`
	CustomerName   *string      `bun:"customer_name"`
	Phone          *string      `bun:"phone"`
	NotifyWhatsapp bool         `bun:"notify_whatsapp,notnull"`
	Language       *string      `bun:"language"`
	Notes          *string      `bun:"notes"`
	FormResponse   jsonbStrings `bun:"form_response,type:jsonb"`
	IdempotencyKey *string      `bun:"idempotency_key"`
	RequestHash    string       `bun:"request_hash"`
	CreatedAt      time.Time    `bun:"created_at"`
	UpdatedAt      time.Time    `bun:"updated_at"`
	CheckedInAt    *time.Time   `bun:"checked_in_at"`
	StartedAt      *time.Time   `bun:"started_at"`
	CompletedAt    *time.Time   `bun:"completed_at"`
	CancelledAt    *time.Time   `bun:"cancelled_at"`
	NoShowAt       *time.Time   `bun:"no_show_at"`
	TurnID         *string      `bun:"turn_id"`
	JoinsLineAt    *time.Time   `bun:"joins_line_at"`
}

func appointmentToRow(a appointments.Appointment) *appointmentRow {
	form := a.FormResponse
	if form == nil {
		form = map[string]string{}
	}
	return &appointmentRow{ID: a.ID, AccountID: a.AccountID, QueueID: a.QueueID, RunID: a.RunID, SlotID: a.SlotID,
		SlotStart: a.SlotStart, SlotEnd: a.SlotEnd, LocalDate: a.Date, Status: string(a.Status),
		CustomerName: a.CustomerName, Phone: a.Phone, NotifyWhatsapp: a.NotifyWhatsapp, Language: a.Language, Notes: a.Notes, FormResponse: form,
		IdempotencyKey: a.IdempotencyKey, RequestHash: a.RequestHash, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		CheckedInAt: a.CheckedInAt, StartedAt: a.StartedAt, CompletedAt: a.CompletedAt, CancelledAt: a.CancelledAt, NoShowAt: a.NoShowAt,
		TurnID: a.TurnID, JoinsLineAt: a.JoinsLineAt}
}

func (row appointmentRow) domain() appointments.Appointment {
	form := row.FormResponse
	if form == nil {
		form = map[string]string{}
	}
	return appointments.Appointment{ID: row.ID, AccountID: row.AccountID, QueueID: row.QueueID, RunID: row.RunID, SlotID: row.SlotID,
		SlotStart: row.SlotStart.UTC(), SlotEnd: row.SlotEnd.UTC(), Date: row.LocalDate, Status: appointments.Status(row.Status),
		CustomerName: row.CustomerName, Phone: row.Phone, NotifyWhatsapp: row.NotifyWhatsapp, Language: row.Language, Notes: row.Notes, FormResponse: form,
		IdempotencyKey: row.IdempotencyKey, RequestHash: row.RequestHash, CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC(),
		CheckedInAt: utcPtr(row.CheckedInAt), StartedAt: utcPtr(row.StartedAt), CompletedAt: utcPtr(row.CompletedAt),
		CancelledAt: utcPtr(row.CancelledAt), NoShowAt: utcPtr(row.NoShowAt), TurnID: row.TurnID, JoinsLineAt: utcPtr(row.JoinsLineAt)}
}

// Appointments is the Postgres appointments.Repository. Seats are taken and
// given back by single conditional UPDATEs, so the row lock each one takes
// serialises concurrent bookings of a slot inside the database, across
// processes, without a lock held between statements.
type Appointments struct{ db *DB }

// NewAppointments builds the repository.
func NewAppointments(db *DB) *Appointments { return &Appointments{db: db} }

// InsertSlots stores new slots in one statement.
func (r *Appointments) InsertSlots(ctx context.Context, slots []appointments.Slot) error {
	if len(slots) == 0 {
		return nil
	}
	rows := make([]slotRow, len(slots))
	for i, s := range slots {
		rows[i] = slotRow{ID: s.ID, AccountID: s.AccountID, QueueID: s.QueueID, RunID: s.RunID, LocalDate: s.Date,
			Timezone: s.Timezone, StartsAt: s.Start, EndsAt: s.End, Capacity: s.Capacity, Remaining: s.Remaining, CreatedAt: s.CreatedAt}
	}
	_, err := r.db.IDB(ctx).NewInsert().Model(&rows).Exec(ctx)
	return wrap(err, "insert slots")
}

// GetSlot returns a slot.
func (r *Appointments) GetSlot(ctx context.Context, id string) (appointments.Slot, error) {
	var row slotRow
	if err := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return appointments.Slot{}, notFound(err, "slot", id)
	}
	return row.domain(), nil
}

// FirstOverlap returns the earliest slot of the run meeting [start, end).
func (r *Appointments) FirstOverlap(ctx context.Context, runID string, start, end time.Time) (appointments.Slot, bool, error) {
	var row slotRow
	err := r.db.IDB(ctx).NewSelect().Model(&row).
		Where("run_id = ?", runID).Where("starts_at < ?", end).Where("ends_at > ?", start).
		Order("starts_at", "id").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return appointments.Slot{}, false, nil
	}
	if err != nil {
		return appointments.Slot{}, false, wrap(err, "find overlapping slot")
	}
	return row.domain(), true, nil
}

// ListSlots pages a run's slots by start then id.
func (r *Appointments) ListSlots(ctx context.Context, runID string, f appointments.SlotFilter, page platform.PageRequest) ([]appointments.Slot, error) {
	afterStart, afterID, err := appointments.PageAfter(page)
	if err != nil {
		return nil, err
	}
	var rows []slotRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("run_id = ?", runID).Order("starts_at", "id").Limit(int64(page.Limit + 1))
	if f.Available {
		q = q.Where("remaining > 0").Where("starts_at > ?", f.Now)
	}
	if f.Date != "" {
		q = q.Where("local_date = ?", f.Date)
	}
	if page.After != "" {
		q = q.Where("(starts_at, id) > (?, ?)", afterStart, afterID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list slots")
	}
	out := make([]appointments.Slot, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// TakeSeat takes a seat with one conditional UPDATE: concurrent takers
// queue on the row, and each re-checks remaining > 0 on the row as the
// previous one left it, so the count never goes below zero.
func (r *Appointments) TakeSeat(ctx context.Context, slotID string) (appointments.Slot, bool, error) {
	var row slotRow
	err := r.db.IDB(ctx).NewRaw(
		"UPDATE appointment_slots SET remaining = remaining - 1 WHERE id = ? AND remaining > 0 RETURNING *", slotID).
		Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		full, err := r.GetSlot(ctx, slotID)
		return full, false, err
	}
	if err != nil {
		return appointments.Slot{}, false, wrap(err, "take seat")
	}
	return row.domain(), true, nil
}

// takeNextSQL picks the run's earliest slot with a seat that has not
// started, and takes the seat in the same statement. Under READ COMMITTED
// the sub-select sees the committed state when the statement starts; a
// concurrent booking that fills the picked slot first makes the UPDATE's
// own re-check (remaining > 0, on the newest row version) fail, and the
// statement returns nothing rather than overbook.
const takeNextSQL = `UPDATE appointment_slots SET remaining = remaining - 1
WHERE id = (
    SELECT id FROM appointment_slots
    WHERE run_id = ? AND remaining > 0 AND starts_at > ?
    ORDER BY starts_at, id LIMIT 1
) AND remaining > 0
RETURNING *`

// aptMaxNextAttempts bounds TakeNextSeat's retries. Each retry means that
// another booking filled a slot in between, so a day's worth of slots is
// far below it; reaching it means something is wrong, not busy.
const aptMaxNextAttempts = 10000

// TakeNextSeat takes a seat of the run's earliest bookable slot. When a
// concurrent booking filled the slot it picked, it looks again: slots fill
// in order, and a booking is refused only when no slot has a seat.
func (r *Appointments) TakeNextSeat(ctx context.Context, runID string, now time.Time) (appointments.Slot, bool, error) {
	for attempt := 0; attempt < aptMaxNextAttempts; attempt++ {
		var row slotRow
		err := r.db.IDB(ctx).NewRaw(takeNextSQL, runID, now).Scan(ctx, &row)
		if err == nil {
			return row.domain(), true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return appointments.Slot{}, false, wrap(err, "take next seat")
		}
		var more bool
		err = r.db.IDB(ctx).NewRaw(
			"SELECT EXISTS (SELECT 1 FROM appointment_slots WHERE run_id = ? AND remaining > 0 AND starts_at > ?)", runID, now).
			Scan(ctx, &more)
		if err != nil {
			return appointments.Slot{}, false, wrap(err, "look for a seat")
		}
		if !more {
			return appointments.Slot{}, false, nil
		}
	}
	return appointments.Slot{}, false, fmt.Errorf("postgres: take next seat of run %s: no progress after %d attempts", runID, aptMaxNextAttempts)
}

// ReturnSeat gives a seat back, never beyond the capacity.
func (r *Appointments) ReturnSeat(ctx context.Context, slotID string) error {
	_, err := r.db.IDB(ctx).NewRaw(
		"UPDATE appointment_slots SET remaining = remaining + 1 WHERE id = ? AND remaining < capacity", slotID).Exec(ctx)
	return wrap(err, "return seat")
}

// CreateAppointment stores a new appointment; the unique index on the
// account's idempotency keys refuses a second one with the same key.
func (r *Appointments) CreateAppointment(ctx context.Context, a appointments.Appointment) error {
	_, err := r.db.IDB(ctx).NewInsert().Model(appointmentToRow(a)).Exec(ctx)
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" && pg.ConstraintName == "appointments_idempotency_key" {
		return appointments.ErrIdempotencyKeyTaken
	}
	return wrap(err, "insert appointment")
}

func (r *Appointments) getAppointment(ctx context.Context, id string, lock bool) (appointments.Appointment, error) {
	var row appointmentRow
	q := r.db.IDB(ctx).NewSelect().Model(&row).Where("id = ?", id)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return appointments.Appointment{}, notFound(err, "appointment", id)
	}
	return row.domain(), nil
}

// GetAppointment returns an appointment.
func (r *Appointments) GetAppointment(ctx context.Context, id string) (appointments.Appointment, error) {
	return r.getAppointment(ctx, id, false)
}

// GetAppointmentForUpdate returns an appointment and locks its row until
// the unit of work ends.
func (r *Appointments) GetAppointmentForUpdate(ctx context.Context, id string) (appointments.Appointment, error) {
	return r.getAppointment(ctx, id, true)
}

// FindByIdempotencyKey returns the account's appointment made with key.
func (r *Appointments) FindByIdempotencyKey(ctx context.Context, accountID, key string) (appointments.Appointment, bool, error) {
	var row appointmentRow
	err := r.db.IDB(ctx).NewSelect().Model(&row).Where("account_id = ?", accountID).Where("idempotency_key = ?", key).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return appointments.Appointment{}, false, nil
	}
	if err != nil {
		return appointments.Appointment{}, false, wrap(err, "find appointment by idempotency key")
	}
	return row.domain(), true, nil
}

// UpdateAppointment writes an appointment's status and times.
func (r *Appointments) UpdateAppointment(ctx context.Context, a appointments.Appointment) error {
	_, err := r.db.IDB(ctx).NewUpdate().Model(appointmentToRow(a)).
		Column("status", "updated_at", "checked_in_at", "started_at", "completed_at", "cancelled_at", "no_show_at", "turn_id", "joins_line_at").
		WherePK().Exec(ctx)
	return wrap(err, "update appointment")
}

// RunsJoining lists the runs with appointments waiting to join at now,
// through the partial index on joins_line_at.
func (r *Appointments) RunsJoining(ctx context.Context, now time.Time) ([]string, error) {
	var ids []string
	err := r.db.IDB(ctx).NewRaw(`SELECT DISTINCT run_id FROM appointments
		WHERE joins_line_at IS NOT NULL AND joins_line_at <= ? ORDER BY run_id`, now).Scan(ctx, &ids)
	return ids, wrap(err, "list runs with appointments waiting to join")
}

// CountJoining counts the run's appointments waiting to join its line at
// now.
func (r *Appointments) CountJoining(ctx context.Context, runID string, now time.Time) (int, error) {
	n, err := r.db.IDB(ctx).NewSelect().Model((*appointmentRow)(nil)).
		Where("run_id = ? AND joins_line_at IS NOT NULL AND joins_line_at <= ?", runID, now).Count(ctx)
	return int(n), wrap(err, "count appointments waiting to join")
}

// Joining returns the run's appointments waiting to join its line at now
// (joins_line_at reached), in the order they join.
func (r *Appointments) Joining(ctx context.Context, runID string, now time.Time) ([]appointments.Appointment, error) {
	var rows []appointmentRow
	err := r.db.IDB(ctx).NewSelect().Model(&rows).
		Where("run_id = ? AND joins_line_at IS NOT NULL AND joins_line_at <= ?", runID, now).
		Order("joins_line_at", "id").Scan(ctx)
	if err != nil {
		return nil, wrap(err, "list appointments waiting to join")
	}
	out := make([]appointments.Appointment, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// ListAppointments pages a run's appointments by slot start then id.
func (r *Appointments) ListAppointments(ctx context.Context, runID string, f appointments.ListFilter, page platform.PageRequest) ([]appointments.Appointment, error) {
	afterStart, afterID, err := appointments.PageAfter(page)
	if err != nil {
		return nil, err
	}
	var rows []appointmentRow
	q := r.db.IDB(ctx).NewSelect().Model(&rows).Where("run_id = ?", runID).Order("slot_start", "id").Limit(int64(page.Limit + 1))
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	if f.Date != "" {
		q = q.Where("local_date = ?", f.Date)
	}
	if page.After != "" {
		q = q.Where("(slot_start, id) > (?, ?)", afterStart, afterID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "list appointments")
	}
	out := make([]appointments.Appointment, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}
