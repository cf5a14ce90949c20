package notify

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/qms-dev/qms/adapters/http/notifyhttp"
	"github.com/qms-dev/qms/adapters/notifier"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/appointments"
	core "github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/ports"
)

// accountSenders builds each account's senders from its own settings
// (core.AccountSettings), the operator's (notify.*) for an account without
// them or for a channel it leaves to the operator. Requests go to the
// operator's provider URLs (notify.twilio_url, notify.cloud_url): one
// provider, many accounts; status callbacks to the account's own path.
type accountSenders struct {
	operator  map[string]core.Sender
	outbox    core.Sender
	n         config.Notify
	publicURL string
	client    *http.Client
}

func newAccountSenders(n config.Notify, publicURL string, log *slog.Logger) *accountSenders {
	return &accountSenders{operator: senders(n, publicURL, log), outbox: notifier.NewLog(log), n: n,
		publicURL: strings.TrimSuffix(publicURL, "/"), client: &http.Client{Timeout: notifier.Timeout}}
}

// provider is the provider an account's settings pick for a channel, ""
// for the operator's.
func provider(a *core.AccountSettings, channel string) string {
	if channel == core.ChannelSMS {
		switch {
		case a.SMS != nil:
			return *a.SMS
		case a.Twilio != nil && (a.Twilio.From != "" || a.Twilio.MessagingServiceSID != ""):
			return core.ProviderTwilio
		}
		return ""
	}
	switch {
	case a.WhatsApp != nil:
		return *a.WhatsApp
	case a.Cloud != nil:
		return core.ProviderCloud
	case a.Twilio != nil && a.Twilio.WhatsAppFrom != "":
		return core.ProviderTwilio
	}
	return ""
}

func (f *accountSenders) sender(channel string, a *core.AccountSettings) (core.Sender, bool) {
	if a == nil {
		sd, ok := f.operator[channel]
		return sd, ok
	}
	switch provider(a, channel) {
	case "":
		sd, ok := f.operator[channel]
		return sd, ok
	case core.ProviderLog:
		return f.outbox, true
	case core.ProviderTwilio:
		if a.Twilio == nil {
			return nil, false
		}
		tw := &notifier.Twilio{BaseURL: f.n.TwilioURL, AccountSID: a.Twilio.AccountSID, AuthToken: a.Twilio.AuthToken,
			From: a.Twilio.From, MessagingServiceSID: a.Twilio.MessagingServiceSID, WhatsAppFrom: a.Twilio.WhatsAppFrom,
			Client: f.client}
		if f.publicURL != "" {
			tw.StatusCallback = f.publicURL + notifyhttp.TwilioStatusPath + notifyhttp.AccountPath(a.AccountID)
		}
		return tw, true
	case core.ProviderCloud:
		if a.Cloud == nil {
			return nil, false
		}
		return &notifier.WhatsApp{BaseURL: f.n.CloudURL, Version: f.n.CloudVersion, PhoneNumberID: a.Cloud.PhoneNumberID,
			Token: a.Cloud.Token, Client: f.client}, true
	}
	return nil, false // none
}

// limiter is the shared rate-limit window (PostgreSQL: across processes)
// as the send rate needs it.
type limiter struct{ rl ports.RateLimiter }

func (l limiter) Allow(ctx context.Context, key string, perMinute int, now time.Time) (bool, time.Time, error) {
	d, err := l.rl.Allow(ctx, key, perMinute, now)
	if err != nil {
		return false, time.Time{}, err
	}
	return d.Allowed, d.Reset, nil
}

// languageGuard declares the turn body's language member (the join page
// sends the language it showed; an integrator may send its customer's)
// and keeps it, in the intake's transaction, for the turn's messages. A
// HYBRID appointment's turn (admitted at check-in) has no body: it keeps
// the language its booking chose, so the turn's moments speak the same
// language as the appointment's reminder did.
// It holds repositories, not services: the services need the turns
// service, which needs its guards.
type languageGuard struct {
	turns.GuardBase
	repo core.AccountRepository
	// booking reads the appointment a turn stands for
	// (appointments.Repository.GetAppointment).
	booking func(ctx context.Context, id string) (appointments.Appointment, error)
}

func (g languageGuard) BodyMembers() []turns.BodyMember {
	return []turns.BodyMember{{Name: core.LanguageMember, Zero: (*string)(nil), Validate: func(v *platform.Validator, value any) {
		if l, _ := value.(*string); l != nil {
			v.OneOf(core.LanguageMember, *l, core.Languages...)
		}
	}}}
}

func (g languageGuard) Admitted(ctx context.Context, in turns.Intake, t turns.Turn) error {
	if t.Phone == nil {
		return nil // nothing will be sent
	}
	l, _ := in.Input.Extensions[core.LanguageMember].(*string)
	if l == nil && t.AppointmentID != nil {
		a, err := g.booking(ctx, *t.AppointmentID)
		if err != nil {
			return fmt.Errorf("notify: the language of appointment %s: %w", *t.AppointmentID, err)
		}
		l = a.Language
	}
	if l == nil {
		return nil // the queue's language
	}
	return g.repo.PutTurnLanguage(ctx, t.AccountID, t.ID, *l)
}
