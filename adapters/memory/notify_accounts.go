package memory

import (
	"context"
	"slices"
	"time"

	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
)

// NotifyAccounts is the memory notify.AccountRepository. Nothing is at
// rest in memory mode, so secrets are kept as given.
type NotifyAccounts struct {
	s         *Store
	messages  *Notify
	settings  *table[notify.AccountSettings]
	languages *table[turnLanguage] // by turn
}

type turnLanguage struct {
	language string
	at       time.Time
}

// NewNotifyAccounts builds the repository on s; replies read msgs' messages.
func NewNotifyAccounts(s *Store, msgs *Notify) *NotifyAccounts {
	return &NotifyAccounts{s: s, messages: msgs, settings: newTable[notify.AccountSettings](s), languages: newTable[turnLanguage](s)}
}

func copyAccountSettings(a notify.AccountSettings) notify.AccountSettings {
	a.SMS, a.WhatsApp, a.SendRate = clonePtr(a.SMS), clonePtr(a.WhatsApp), clonePtr(a.SendRate)
	a.Twilio, a.Cloud, a.QuietHours = clonePtr(a.Twilio), clonePtr(a.Cloud), clonePtr(a.QuietHours)
	a.Templates = slices.Clone(a.Templates)
	return a
}

// AccountSettings returns an account's settings, if it set any.
func (r *NotifyAccounts) AccountSettings(ctx context.Context, accountID string) (a notify.AccountSettings, ok bool, err error) {
	r.s.read(ctx, func() { a, ok = r.settings.rows[accountID] })
	return copyAccountSettings(a), ok, nil
}

// PutAccountSettings stores an account's settings.
func (r *NotifyAccounts) PutAccountSettings(ctx context.Context, a notify.AccountSettings) error {
	a = copyAccountSettings(a)
	r.s.write(ctx, func() func() { return r.settings.put(a.AccountID, a) })
	return nil
}

// DeleteAccountSettings forgets an account's settings.
func (r *NotifyAccounts) DeleteAccountSettings(ctx context.Context, accountID string) error {
	r.s.write(ctx, func() func() { return r.settings.del(accountID) })
	return nil
}

// PutTurnLanguage records a turn's customer's language.
func (r *NotifyAccounts) PutTurnLanguage(ctx context.Context, _, turnID, language string) error {
	r.s.write(ctx, func() func() { return r.languages.put(turnID, turnLanguage{language: language, at: time.Now()}) })
	return nil
}

// ClearTurnLanguages forgets the languages recorded before cutoff.
func (r *NotifyAccounts) ClearTurnLanguages(ctx context.Context, before time.Time, limit int) (n int, err error) {
	r.s.write(ctx, func() func() {
		var undo []func()
		for id, l := range r.languages.rows {
			if n < limit && l.at.Before(before) {
				undo = append(undo, r.languages.del(id))
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

// TurnLanguage reads a turn's customer's language.
func (r *NotifyAccounts) TurnLanguage(ctx context.Context, turnID string) (l string, err error) {
	r.s.read(ctx, func() { l = r.languages.rows[turnID].language })
	return l, nil
}

// LatestToInAccount is the newest message the account sent to phone.
func (r *NotifyAccounts) LatestToInAccount(ctx context.Context, accountID, phone string) (m notify.Message, err error) {
	found := false
	r.s.read(ctx, func() {
		for _, x := range r.messages.messages.rows {
			if x.AccountID == accountID && x.To == phone &&
				(!found || x.CreatedAt.After(m.CreatedAt) || x.CreatedAt.Equal(m.CreatedAt) && x.ID > m.ID) {
				m, found = x, true
			}
		}
	})
	if !found {
		return m, platform.NotFound("notification", phone)
	}
	return copyMessage(m), nil
}
