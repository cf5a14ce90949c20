package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/qms-dev/qms/core/notify"
)

// Notify is the PostgreSQL notify.Repository (migration 0140).
type Notify struct{ db *DB }

// NewNotify builds the repository.
func NewNotify(db *DB) *Notify { return &Notify{db: db} }

type notificationRow struct {
	bun.BaseModel     `bun:"table:notifications"`
	ID                string     `bun:"id,pk"`
	AccountID         string     `bun:"account_id"`
	TurnID            string     `bun:"turn_id"`
	AppointmentID     string     `bun:"appointment_id,nullzero"`
	QueueID           string     `bun:"queue_id"`
	RunID             string     `bun:"run_id"`
	Key               string     `bun:"key"`
	Moment            string     `bun:"moment"`
	Occurrence        int        `bun:"occurrence"`
	Channel           string     `bun:"channel"`
	Phone             string     `bun:"phone"`
	Language          string     `bun:"language"`
	Params            jsonb      `bun:"params,type:jsonb"`
	Body              string     `bun:"body"`
	Provider          string     `bun:"provider"`
	ProviderMessageID *string    `bun:"provider_message_id"`
	Status            string     `bun:"status"`
	ErrorCode         *string    `bun:"error_code"`
	Error             *string    `bun:"error"`
	Attempts          int        `bun:"attempts"`
	FallbackOf        *string    `bun:"fallback_of"`
	CreatedAt         time.Time  `bun:"created_at"`
	UpdatedAt         time.Time  `bun:"updated_at"`
	SentAt            *time.Time `bun:"sent_at"`
}

func notificationRowOf(m notify.Message) (*notificationRow, error) {
	params, err := json.Marshal(m.Params)
	if err != nil {
		return nil, fmt.Errorf("postgres: encode notification params: %w", err)
	}
	if m.Params == nil {
		params = []byte("{}")
	}
	return &notificationRow{ID: m.ID, AccountID: m.AccountID, TurnID: m.TurnID, AppointmentID: m.AppointmentID, QueueID: m.QueueID, RunID: m.RunID,
		Key: m.Key(), Moment: m.Moment, Occurrence: m.Occurrence, Channel: m.Channel, Phone: m.To, Language: m.Language,
		Params: params, Body: m.Body, Provider: m.Provider, ProviderMessageID: m.ProviderMessageID, Status: m.Status,
		ErrorCode: m.ErrorCode, Error: m.Error, Attempts: m.Attempts, FallbackOf: m.FallbackOf,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, SentAt: m.SentAt}, nil
}

func (r notificationRow) domain() (notify.Message, error) {
	m := notify.Message{ID: r.ID, AccountID: r.AccountID, TurnID: r.TurnID, AppointmentID: r.AppointmentID, QueueID: r.QueueID, RunID: r.RunID,
		Moment: r.Moment, Occurrence: r.Occurrence, Channel: r.Channel, To: r.Phone, Language: r.Language, Body: r.Body,
		Provider: r.Provider, ProviderMessageID: r.ProviderMessageID, Status: r.Status, ErrorCode: r.ErrorCode, Error: r.Error,
		Attempts: r.Attempts, FallbackOf: r.FallbackOf, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), SentAt: utcPtr(r.SentAt)}
	if err := json.Unmarshal(r.Params, &m.Params); err != nil {
		return m, fmt.Errorf("postgres: notification %s params: %w", r.ID, err)
	}
	return m, nil
}

// Insert stores m unless its key is taken.
func (r *Notify) Insert(ctx context.Context, m notify.Message) (bool, error) {
	row, err := notificationRowOf(m)
	if err != nil {
		return false, err
	}
	res, err := r.db.IDB(ctx).NewInsert().Model(row).On("CONFLICT (key) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, wrap(err, "insert notification")
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err, "insert notification")
}

func (r *Notify) one(ctx context.Context, lock bool, what, id string, where string, args ...any) (notify.Message, error) {
	var row notificationRow
	q := r.db.IDB(ctx).NewSelect().Model(&row).Where(where, args...).Limit(1)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return notify.Message{}, notFound(err, what, id)
	}
	return row.domain()
}

// Get returns a message.
func (r *Notify) Get(ctx context.Context, id string) (notify.Message, error) {
	return r.one(ctx, false, "notification", id, "id = ?", id)
}

// GetForUpdate returns and locks a message.
func (r *Notify) GetForUpdate(ctx context.Context, id string) (notify.Message, error) {
	return r.one(ctx, true, "notification", id, "id = ?", id)
}

// Update stores m.
func (r *Notify) Update(ctx context.Context, m notify.Message) error {
	row, err := notificationRowOf(m)
	if err != nil {
		return err
	}
	_, err = r.db.IDB(ctx).NewUpdate().Model(row).WherePK().
		Column("params", "body", "provider", "provider_message_id", "status", "error_code", "error", "attempts", "updated_at", "sent_at").Exec(ctx)
	return wrap(err, "update notification")
}

// ByProviderID finds, and locks, a message by its provider's id.
func (r *Notify) ByProviderID(ctx context.Context, provider, id string) (notify.Message, error) {
	return r.one(ctx, true, "notification", id, "provider = ? AND provider_message_id = ?", provider, id)
}

// ListByTurn lists a turn's messages, oldest first.
func (r *Notify) ListByTurn(ctx context.Context, turnID string) ([]notify.Message, error) {
	return r.list(ctx, "turn_id = ?", turnID)
}

// ListByAppointment lists an appointment's messages, oldest first.
func (r *Notify) ListByAppointment(ctx context.Context, appointmentID string) ([]notify.Message, error) {
	return r.list(ctx, "appointment_id = ?", appointmentID)
}

func (r *Notify) list(ctx context.Context, where string, id string) ([]notify.Message, error) {
	var rows []notificationRow
	if err := r.db.IDB(ctx).NewSelect().Model(&rows).Where(where, id).Order("created_at", "id").Scan(ctx); err != nil {
		return nil, wrap(err, "list notifications")
	}
	out := make([]notify.Message, 0, len(rows))
	for _, row := range rows {
		m, err := row.domain()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// LatestTo is the newest message to phone.
func (r *Notify) LatestTo(ctx context.Context, phone string) (notify.Message, error) {
	var row notificationRow
	err := r.db.IDB(ctx).NewSelect().Model(&row).Where("phone = ? AND phone <> ''", phone).
		OrderExpr("created_at DESC, id DESC").Limit(1).Scan(ctx)
	if err != nil {
		return notify.Message{}, notFound(err, "notification", phone)
	}
	return row.domain()
}

// SetSuppressed adds phone to, or takes it off, the account's list.
func (r *Notify) SetSuppressed(ctx context.Context, accountID, phone string, on bool, at time.Time) error {
	var err error
	if on {
		_, err = r.db.IDB(ctx).NewRaw(`INSERT INTO notification_suppressions (account_id, phone, created_at) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`, accountID, phone, at).Exec(ctx)
	} else {
		_, err = r.db.IDB(ctx).NewRaw(`DELETE FROM notification_suppressions WHERE account_id = ? AND phone = ?`, accountID, phone).Exec(ctx)
	}
	return wrap(err, "set suppression")
}

// Suppressed reports whether phone is on the account's list.
func (r *Notify) Suppressed(ctx context.Context, accountID, phone string) (bool, error) {
	var ok bool
	err := r.db.IDB(ctx).NewRaw(`SELECT EXISTS (SELECT 1 FROM notification_suppressions WHERE account_id = ? AND phone = ?)`,
		accountID, phone).Scan(ctx, &ok)
	return ok, wrap(err, "read suppression")
}

// Near returns a turn's near-the-front state (zero for none).
func (r *Notify) Near(ctx context.Context, turnID string) (notify.NearState, error) {
	var s notify.NearState
	var rows []struct {
		AccountID  string `bun:"account_id"`
		Occurrence int    `bun:"occurrence"`
		Sent       bool   `bun:"sent"`
	}
	if err := r.db.IDB(ctx).NewRaw(`SELECT account_id, occurrence, sent FROM notification_near WHERE turn_id = ?`, turnID).Scan(ctx, &rows); err != nil {
		return s, wrap(err, "read near state")
	}
	if len(rows) == 1 {
		s = notify.NearState{TurnID: turnID, AccountID: rows[0].AccountID, Occurrence: rows[0].Occurrence, Sent: rows[0].Sent}
	}
	return s, nil
}

// PutNear stores a turn's near-the-front state.
func (r *Notify) PutNear(ctx context.Context, s notify.NearState) error {
	_, err := r.db.IDB(ctx).NewRaw(`INSERT INTO notification_near (turn_id, account_id, occurrence, sent) VALUES (?, ?, ?, ?)
		ON CONFLICT (turn_id) DO UPDATE SET occurrence = EXCLUDED.occurrence, sent = EXCLUDED.sent`,
		s.TurnID, s.AccountID, s.Occurrence, s.Sent).Exec(ctx)
	return wrap(err, "store near state")
}

// QueueSettings returns a queue's settings, if it set any.
func (r *Notify) QueueSettings(ctx context.Context, queueID string) (notify.QueueSettings, bool, error) {
	var s notify.QueueSettings
	var rows []struct {
		Settings jsonb `bun:"settings"`
	}
	if err := r.db.IDB(ctx).NewRaw(`SELECT settings FROM notification_settings WHERE queue_id = ?`, queueID).Scan(ctx, &rows); err != nil {
		return s, false, wrap(err, "read notification settings")
	}
	if len(rows) == 0 {
		return s, false, nil
	}
	if err := json.Unmarshal(rows[0].Settings, &s); err != nil {
		return s, false, fmt.Errorf("postgres: notification settings of %s: %w", queueID, err)
	}
	return s, true, nil
}

// PutQueueSettings stores a queue's settings.
func (r *Notify) PutQueueSettings(ctx context.Context, accountID, queueID string, s notify.QueueSettings) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("postgres: encode notification settings: %w", err)
	}
	_, err = r.db.IDB(ctx).NewRaw(`INSERT INTO notification_settings (queue_id, account_id, settings) VALUES (?, ?, ?)
		ON CONFLICT (queue_id) DO UPDATE SET settings = EXCLUDED.settings`, queueID, accountID, jsonb(b)).Exec(ctx)
	return wrap(err, "store notification settings")
}

// ClearPhones forgets the numbers of messages created before cutoff,
// but for those still QUEUED (an appointment's reminder, due days after
// the booking that decided it).
func (r *Notify) ClearPhones(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := r.db.IDB(ctx).NewRaw(`UPDATE notifications SET phone = '' WHERE id IN (
		SELECT id FROM notifications WHERE phone <> '' AND created_at < ? AND status <> ?
		ORDER BY created_at LIMIT ?)`, before, notify.StatusQueued, limit).Exec(ctx)
	if err != nil {
		return 0, wrap(err, "clear notification phones")
	}
	n, err := res.RowsAffected()
	return int(n), wrap(err, "clear notification phones")
}

// ClearTurnPhones forgets the phones of turns finished before cutoff
// (turns_phone_finished_idx finds them).
func (r *Notify) ClearTurnPhones(ctx context.Context, finishedBefore time.Time, limit int) (int, error) {
	res, err := r.db.IDB(ctx).NewRaw(`UPDATE turns SET phone = NULL WHERE id IN (
		SELECT id FROM turns WHERE phone IS NOT NULL AND finished_at < ? ORDER BY finished_at LIMIT ?)`, finishedBefore, limit).Exec(ctx)
	if err != nil {
		return 0, wrap(err, "clear turn phones")
	}
	n, err := res.RowsAffected()
	return int(n), wrap(err, "clear turn phones")
}

// ClearAppointmentPhones forgets the phones of appointments finished
// before cutoff (appointments_phone_finished_idx finds them).
func (r *Notify) ClearAppointmentPhones(ctx context.Context, finishedBefore time.Time, limit int) (int, error) {
	res, err := r.db.IDB(ctx).NewRaw(`UPDATE appointments SET phone = NULL WHERE id IN (
		SELECT id FROM appointments WHERE phone IS NOT NULL
		AND COALESCE(completed_at, cancelled_at, no_show_at) < ?
		ORDER BY COALESCE(completed_at, cancelled_at, no_show_at) LIMIT ?)`, finishedBefore, limit).Exec(ctx)
	if err != nil {
		return 0, wrap(err, "clear appointment phones")
	}
	n, err := res.RowsAffected()
	return int(n), wrap(err, "clear appointment phones")
}
