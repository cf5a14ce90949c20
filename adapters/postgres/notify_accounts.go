package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/qms-dev/qms/core/notify"
)

// NotifyAccounts is the Postgres notify.AccountRepository: the accounts'
// own messaging settings, their provider secrets sealed at rest under
// webhooks.secret_key (secretbox.go, a key derived for this purpose),
// and the languages of the turns' customers.
type NotifyAccounts struct {
	db  *DB
	box secretBox
}

// NewNotifyAccounts builds the repository; key and oldKeys are the
// webhook sealing keys (webhooks.secret_key, webhooks.old_secret_keys).
func NewNotifyAccounts(db *DB, key string, oldKeys ...string) (*NotifyAccounts, error) {
	box, err := newSecretBox("qms notification provider secrets v1", key, oldKeys...)
	if err != nil {
		return nil, fmt.Errorf("postgres: notification accounts: %w", err)
	}
	return &NotifyAccounts{db: db, box: box}, nil
}

// accountSettingsDoc is the settings column: everything but the secrets.
type accountSettingsDoc struct {
	SMS        *string               `json:"sms,omitempty"`
	WhatsApp   *string               `json:"whatsapp,omitempty"`
	Twilio     *notify.TwilioAccount `json:"twilio,omitempty"`
	Cloud      *notify.CloudAccount  `json:"cloud,omitempty"`
	Templates  []notify.Template     `json:"templates,omitempty"`
	QuietHours *notify.QuietHours    `json:"quietHours,omitempty"`
	SendRate   *int                  `json:"sendRate,omitempty"`
}

// accountSecrets is the sealed column's plain text.
type accountSecrets struct {
	TwilioAuthToken  string `json:"twilioAuthToken,omitempty"`
	CloudToken       string `json:"cloudToken,omitempty"`
	CloudAppSecret   string `json:"cloudAppSecret,omitempty"`
	CloudVerifyToken string `json:"cloudVerifyToken,omitempty"`
}

// AccountSettings reads and opens an account's settings.
func (r *NotifyAccounts) AccountSettings(ctx context.Context, accountID string) (notify.AccountSettings, bool, error) {
	var rows []struct {
		Settings  jsonb     `bun:"settings"`
		Secrets   string    `bun:"secrets"`
		UpdatedAt time.Time `bun:"updated_at"`
	}
	err := r.db.IDB(ctx).NewRaw(`SELECT settings, secrets, updated_at FROM notification_accounts WHERE account_id = ?`, accountID).Scan(ctx, &rows)
	if err != nil {
		return notify.AccountSettings{}, false, wrap(err, "read notification account")
	}
	if len(rows) == 0 {
		return notify.AccountSettings{}, false, nil
	}
	var doc accountSettingsDoc
	if err := json.Unmarshal(rows[0].Settings, &doc); err != nil {
		return notify.AccountSettings{}, false, fmt.Errorf("postgres: notification account %s: %w", accountID, err)
	}
	plain, _, err := r.box.open(accountID, rows[0].Secrets)
	if err != nil {
		return notify.AccountSettings{}, false, fmt.Errorf("postgres: notification account %s: secrets: %w", accountID, err)
	}
	var sec accountSecrets
	if err := json.Unmarshal([]byte(plain), &sec); err != nil {
		return notify.AccountSettings{}, false, fmt.Errorf("postgres: notification account %s: secrets: %w", accountID, err)
	}
	s := notify.AccountSettings{AccountID: accountID, SMS: doc.SMS, WhatsApp: doc.WhatsApp, Twilio: doc.Twilio, Cloud: doc.Cloud,
		Templates: doc.Templates, QuietHours: doc.QuietHours, SendRate: doc.SendRate, UpdatedAt: rows[0].UpdatedAt.UTC()}
	if s.Twilio != nil {
		s.Twilio.AuthToken = sec.TwilioAuthToken
	}
	if s.Cloud != nil {
		s.Cloud.Token, s.Cloud.AppSecret, s.Cloud.VerifyToken = sec.CloudToken, sec.CloudAppSecret, sec.CloudVerifyToken
	}
	return s, true, nil
}

// PutAccountSettings stores an account's settings, its secrets sealed.
func (r *NotifyAccounts) PutAccountSettings(ctx context.Context, s notify.AccountSettings) error {
	doc := accountSettingsDoc{SMS: s.SMS, WhatsApp: s.WhatsApp, Templates: s.Templates, QuietHours: s.QuietHours, SendRate: s.SendRate}
	var sec accountSecrets
	if s.Twilio != nil {
		t := *s.Twilio
		sec.TwilioAuthToken, t.AuthToken = t.AuthToken, ""
		doc.Twilio = &t
	}
	if s.Cloud != nil {
		c := *s.Cloud
		sec.CloudToken, sec.CloudAppSecret, sec.CloudVerifyToken = c.Token, c.AppSecret, c.VerifyToken
		c.Token, c.AppSecret, c.VerifyToken = "", "", ""
		doc.Cloud = &c
	}
	settings, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("postgres: encode notification account: %w", err)
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return fmt.Errorf("postgres: encode notification secrets: %w", err)
	}
	_, err = r.db.IDB(ctx).NewRaw(`INSERT INTO notification_accounts (account_id, settings, secrets, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (account_id) DO UPDATE SET settings = EXCLUDED.settings, secrets = EXCLUDED.secrets, updated_at = EXCLUDED.updated_at`,
		s.AccountID, jsonb(settings), r.box.seal(s.AccountID, string(plain)), s.UpdatedAt).Exec(ctx)
	return wrap(err, "store notification account")
}

// DeleteAccountSettings forgets an account's settings.
func (r *NotifyAccounts) DeleteAccountSettings(ctx context.Context, accountID string) error {
	_, err := r.db.IDB(ctx).NewRaw(`DELETE FROM notification_accounts WHERE account_id = ?`, accountID).Exec(ctx)
	return wrap(err, "delete notification account")
}

// PutTurnLanguage records a turn's customer's language.
func (r *NotifyAccounts) PutTurnLanguage(ctx context.Context, accountID, turnID, language string) error {
	_, err := r.db.IDB(ctx).NewRaw(`INSERT INTO notification_turn_languages (turn_id, account_id, language) VALUES (?, ?, ?)
		ON CONFLICT (turn_id) DO UPDATE SET language = EXCLUDED.language`, turnID, accountID, language).Exec(ctx)
	return wrap(err, "store turn language")
}

// ClearTurnLanguages forgets the languages recorded before cutoff.
func (r *NotifyAccounts) ClearTurnLanguages(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := r.db.IDB(ctx).NewRaw(`DELETE FROM notification_turn_languages WHERE turn_id IN (
		SELECT turn_id FROM notification_turn_languages WHERE created_at < ? ORDER BY created_at LIMIT ?)`, before, limit).Exec(ctx)
	if err != nil {
		return 0, wrap(err, "clear turn languages")
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// TurnLanguage reads a turn's customer's language, "" for none.
func (r *NotifyAccounts) TurnLanguage(ctx context.Context, turnID string) (string, error) {
	var rows []string
	err := r.db.IDB(ctx).NewRaw(`SELECT language FROM notification_turn_languages WHERE turn_id = ?`, turnID).Scan(ctx, &rows)
	if err != nil || len(rows) == 0 {
		return "", wrap(err, "read turn language")
	}
	return rows[0], nil
}

// LatestToInAccount is the newest message the account sent to phone.
func (r *NotifyAccounts) LatestToInAccount(ctx context.Context, accountID, phone string) (notify.Message, error) {
	var row notificationRow
	err := r.db.IDB(ctx).NewSelect().Model(&row).Where("account_id = ? AND phone = ? AND phone <> ''", accountID, phone).
		OrderExpr("created_at DESC, id DESC").Limit(1).Scan(ctx)
	if err != nil {
		return notify.Message{}, notFound(err, "notification", phone)
	}
	return row.domain()
}
