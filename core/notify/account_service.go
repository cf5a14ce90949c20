package notify

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Accounts are what the service needs for the accounts' own settings:
// their storage, the factory of their senders, the limiter of their send
// rates. Without a Repo every account sends through the operator's
// senders, unbounded.
type Accounts struct {
	Repo    AccountRepository
	Senders SenderFactory
	Limiter Limiter
}

// accountParts are the per-account pieces of the service: the accounts'
// own settings, the senders built from them, the shared send-rate window.
type accountParts struct {
	repo    AccountRepository
	factory SenderFactory
	limiter Limiter
	cache   *settingsCache
}

// SettingsTTL is how long a process keeps an account's settings before
// reading them again: every message reads them twice (when decided, in
// the turn's transaction, and when sent), and a busy account sends many a
// second. A change is seen at once by the process that made it, within
// SettingsTTL by the others.
const SettingsTTL = time.Second

type cachedSettings struct {
	a   *AccountSettings // nil: none
	exp time.Time
}

type settingsCache struct {
	mu sync.Mutex
	m  map[string]cachedSettings
}

func (c *settingsCache) get(id string, now time.Time) (*AccountSettings, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || !now.Before(e.exp) {
		return nil, false
	}
	return e.a, true
}

func (c *settingsCache) put(id string, a *AccountSettings, exp time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 10000 {
		clear(c.m) // bounded: a burst over many accounts reads again
	}
	c.m[id] = cachedSettings{a: a, exp: exp}
}

func (c *settingsCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// accountOf is an account's own settings, nil when it has none. The
// result is shared: callers do not change it.
func (s *Decider) accountOf(ctx context.Context, accountID string) (*AccountSettings, error) {
	if s.acc.repo == nil {
		return nil, nil
	}
	now := time.Now() // the cache's own clock: tests move the service's
	if a, ok := s.acc.cache.get(accountID, now); ok {
		return a, nil
	}
	a, ok, err := s.acc.repo.AccountSettings(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("notify: account settings of %s: %w", accountID, err)
	}
	var out *AccountSettings
	if ok {
		out = &a
	}
	s.acc.cache.put(accountID, out, now.Add(SettingsTTL))
	return out, nil
}

// senderOf is the sender of a channel for an account with settings a
// (nil: the operator's).
func (s *Decider) senderOf(a *AccountSettings, channel string) (Sender, bool) {
	if s.acc.factory != nil {
		return s.acc.factory(channel, a)
	}
	sd, ok := s.senders[channel]
	return sd, ok
}

// AccountSettings is the account's own settings as answers show them:
// no secret, only whether each is set.
func (s *Decider) AccountSettings(ctx context.Context, accountID string) (AccountSettingsView, error) {
	if s.acc.repo == nil {
		return AccountSettingsView{Templates: []Template{}}, nil
	}
	// Read through, not from the cache: a read shows what is stored.
	a, ok, err := s.acc.repo.AccountSettings(ctx, accountID)
	if err != nil || !ok {
		return AccountSettingsView{Templates: []Template{}}, err
	}
	return a.View(), nil
}

// PutAccountSettings validates and stores the account's settings. A
// secret left out keeps the stored one of the same provider account.
func (s *Decider) PutAccountSettings(ctx context.Context, accountID string, in AccountSettingsInput) (AccountSettingsView, error) {
	if s.acc.repo == nil {
		return AccountSettingsView{}, platform.NewError(platform.KindUnavailable, "NOT_CONFIGURED", "per-account settings are not wired", nil)
	}
	var out AccountSettings
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		old, ok, err := s.acc.repo.AccountSettings(ctx, accountID)
		if err != nil {
			return err
		}
		if out, err = in.Merge(accountID, old, ok, s.clock.Now()); err != nil {
			return err
		}
		return s.acc.repo.PutAccountSettings(ctx, out)
	})
	s.acc.cache.forget(accountID)
	if err != nil {
		return AccountSettingsView{}, err
	}
	return out.View(), nil
}

// DeleteAccountSettings forgets the account's settings (secrets
// included): the operator's configuration serves it again.
func (s *Decider) DeleteAccountSettings(ctx context.Context, accountID string) error {
	if s.acc.repo == nil {
		return nil
	}
	err := s.uow.Do(ctx, func(ctx context.Context) error { return s.acc.repo.DeleteAccountSettings(ctx, accountID) })
	s.acc.cache.forget(accountID)
	return err
}

// RecordLanguage keeps the language the customer of a turn used (the
// join page's), inside the intake's unit of work: the turn's messages go
// in it. A language outside the four is ignored.
func (s *Decider) RecordLanguage(ctx context.Context, accountID, turnID, lang string) error {
	if s.acc.repo == nil || !validLanguage(lang) {
		return nil
	}
	return s.acc.repo.PutTurnLanguage(ctx, accountID, turnID, lang)
}

func validLanguage(l string) bool {
	for _, x := range Languages {
		if x == l {
			return true
		}
	}
	return false
}

// carryLanguage gives a turn that continues another (a forward, a
// transfer) its customer's language, when one was recorded: the messages
// of the new queue then speak it too, not the new queue's.
func (s *Decider) carryLanguage(ctx context.Context, accountID, from, to string) error {
	if s.acc.repo == nil {
		return nil
	}
	l, err := s.acc.repo.TurnLanguage(ctx, from)
	if err != nil {
		return fmt.Errorf("notify: language of turn %s: %w", from, err)
	}
	if !validLanguage(l) {
		return nil
	}
	return s.acc.repo.PutTurnLanguage(ctx, accountID, to, l)
}

// languageOf is the language of a turn's messages: its customer's, else
// the queue's (fallback).
func (s *Decider) languageOf(ctx context.Context, turnID, fallback string) (string, error) {
	if s.acc.repo == nil {
		return fallback, nil
	}
	l, err := s.acc.repo.TurnLanguage(ctx, turnID)
	if err != nil {
		return "", fmt.Errorf("notify: language of turn %s: %w", turnID, err)
	}
	if validLanguage(l) {
		return l, nil
	}
	return fallback, nil
}

// wording fills out's text and template from the account's templates,
// else the built-in ones.
func wording(a *AccountSettings, m Message, out *Outgoing) {
	t, ok := a.template(m.Moment, m.Language)
	if !ok {
		return
	}
	if t.SMSText != nil && m.Channel == ChannelSMS {
		out.Body = fill(*t.SMSText, m.Params)
	}
	if t.WhatsAppTemplate != nil {
		out.Template = *t.WhatsAppTemplate
	}
	if t.WhatsAppLanguage != nil {
		out.TemplateLanguage = *t.WhatsAppLanguage
	}
}

// hold is when a message about to go must wait, and why: the account's
// quiet hours (reminders only), then its send rate. Zero: it goes now.
// The rate is spent here, last, so a message dropped or deferred for
// another reason spends nothing.
func (s *Decider) hold(ctx context.Context, a *AccountSettings, m Message) (time.Time, string, error) {
	if a == nil {
		return time.Time{}, "", nil
	}
	now := s.clock.Now()
	if a.QuietHours != nil && Deferred(m.Moment) {
		if until, quiet := a.QuietHours.Until(now); quiet {
			return until, "deferred: the account's quiet hours end at " + until.Format(time.RFC3339), nil
		}
	}
	if a.SendRate != nil && s.acc.limiter != nil {
		ok, at, err := s.acc.limiter.Allow(ctx, "notify:"+m.AccountID, *a.SendRate, now)
		if err != nil {
			// A limiter outage must not stop "your turn": the provider's
			// own limits still hold, and a 429 is retried.
			s.log.Warn("notify: send rate unavailable, sending", "account", m.AccountID, "err", err)
			return time.Time{}, "", nil
		}
		if !ok {
			return at, "deferred: the account's send rate (" + strconv.Itoa(*a.SendRate) + " a minute)", nil
		}
	}
	return time.Time{}, "", nil
}

// postpone keeps a message QUEUED and schedules its send again at at: a
// message over the rate or in the quiet hours is delayed, never dropped
// (it still loses its point as any other, when its turn moves on).
func (s *Decider) postpone(ctx context.Context, id string, at time.Time, why string) error {
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.repo.GetForUpdate(ctx, id)
		if err != nil || Final(m.Status) {
			return err
		}
		m.Error, m.UpdatedAt = &why, s.clock.Now()
		if err := s.repo.Update(ctx, m); err != nil {
			return err
		}
		// A key of its own: the running job still holds the message's.
		return s.jobs.Schedule(ctx, platform.Job{Kind: JobSend, Args: SendArgs{MessageID: id}, RunAt: at,
			UniqueKey: id + "@" + strconv.FormatInt(at.UnixNano(), 10)})
	})
	if err == nil {
		s.observe("deferred")
	}
	return err
}

// ReplyIn acts on a reply that reached an account's own callback: it
// concerns the newest message that account sent to the number.
func (s *Service) ReplyIn(ctx context.Context, accountID, from, text string) (string, error) {
	if s.acc.repo == nil {
		return "", nil
	}
	return s.reply(ctx, from, text, func(ctx context.Context, to string) (Message, error) {
		return s.acc.repo.LatestToInAccount(ctx, accountID, to)
	})
}

// LanguageMember is the turn create body's member (declared by the
// module, turns.BodyMember) that carries the customer's language: the
// join page sends the language it showed.
const LanguageMember = "language"

// Credentials are an account's own provider settings, secrets included,
// for the HTTP layer to check its callbacks' signatures; nil when the
// account has none (its callbacks are refused).
func (s *Decider) Credentials(ctx context.Context, accountID string) (*AccountSettings, error) {
	return s.accountOf(ctx, accountID)
}

// clearLanguages forgets, with the numbers, the languages of turns taken
// before cutoff: nothing is sent to them any more.
func (s *Decider) clearLanguages(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if s.acc.repo == nil {
		return 0, nil
	}
	var n int
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		n, err = s.acc.repo.ClearTurnLanguages(ctx, cutoff, limit)
		return err
	})
	return n, err
}
