package notify

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

func TestQuietHoursUntil(t *testing.T) {
	madrid, err := time.LoadLocation("Europe/Madrid")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, madrid)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	night := QuietHours{Timezone: "Europe/Madrid", Start: "21:00", End: "08:00"}
	lunch := QuietHours{Timezone: "Europe/Madrid", Start: "14:00", End: "16:30"}
	for _, c := range []struct {
		name  string
		q     QuietHours
		now   time.Time
		quiet bool
		until time.Time
	}{
		{"before the night", night, at("2026-11-26 20:59"), false, time.Time{}},
		{"at its start", night, at("2026-11-26 21:00"), true, at("2026-11-27 08:00")},
		{"late in the evening", night, at("2026-11-26 23:30"), true, at("2026-11-27 08:00")},
		{"after midnight", night, at("2026-11-27 03:10"), true, at("2026-11-27 08:00")},
		{"at its end", night, at("2026-11-27 08:00"), false, time.Time{}},
		{"in the day", night, at("2026-11-27 12:00"), false, time.Time{}},
		{"inside a day window", lunch, at("2026-11-27 15:00"), true, at("2026-11-27 16:30")},
		{"outside a day window", lunch, at("2026-11-27 16:30"), false, time.Time{}},
		// 29 March 2026: Madrid moves from +01:00 to +02:00 at 02:00.
		{"across the change to summer time", night, at("2026-03-28 22:00"), true, at("2026-03-29 08:00")},
		{"a UTC instant read in the zone", night, time.Date(2026, 11, 26, 21, 30, 0, 0, time.UTC), true, at("2026-11-27 08:00")},
	} {
		until, quiet := c.q.Until(c.now)
		if quiet != c.quiet || !until.Equal(c.until) {
			t.Errorf("%s: Until(%v) = %v, %v; want %v, %v", c.name, c.now, until, quiet, c.until, c.quiet)
		}
	}
	if _, quiet := (QuietHours{Timezone: "Nowhere/City", Start: "00:00", End: "23:59"}).Until(at("2026-11-27 12:00")); quiet {
		t.Error("a timezone that does not load quiets nothing")
	}
	if !Deferred(MomentReminder) || Deferred(MomentCalled) || Deferred(MomentJoined) {
		t.Error("only the appointment reminder waits out the quiet hours")
	}
}

// fields are the paths an error names.
func fields(err error) []string {
	var out []string
	for _, f := range platform.FieldErrors(err) {
		out = append(out, f.Path)
	}
	return out
}

func TestAccountSettingsMerge(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	sid := "AC" + strings.Repeat("a", 32)
	in := AccountSettingsInput{Twilio: &TwilioInput{AccountSID: &sid, AuthToken: platform.Ptr("secret-token"), From: platform.Ptr("+15005550006")},
		QuietHours: &QuietHours{Timezone: "America/Sao_Paulo", Start: "22:00", End: "07:30"}, SendRate: platform.Ptr(30),
		Templates: []Template{{Moment: MomentCalled, Language: "es", SMSText: platform.Ptr("{code}: a {station}")}}}
	s, err := in.Merge("acc_1", AccountSettings{}, false, now)
	if err != nil || s.Twilio.AuthToken != "secret-token" || s.AccountID != "acc_1" {
		t.Fatalf("valid settings: %+v, %v", s, err)
	}
	if v := s.View(); !v.Twilio.AuthTokenSet || strings.Contains(jsonOf(t, v), "secret-token") {
		t.Fatalf("view: %s", jsonOf(t, v))
	}
	// Written back without the token: the same account keeps it.
	again := AccountSettingsInput{Twilio: &TwilioInput{AccountSID: &sid, From: platform.Ptr("+15005550007")}}
	s2, err := again.Merge("acc_1", s, true, now)
	if err != nil || s2.Twilio.AuthToken != "secret-token" || s2.Twilio.From != "+15005550007" {
		t.Fatalf("kept token: %+v, %v", s2.Twilio, err)
	}
	// Another Twilio account without its token: refused.
	other := "AC" + strings.Repeat("b", 32)
	_, err = AccountSettingsInput{Twilio: &TwilioInput{AccountSID: &other, From: platform.Ptr("+15005550007")}}.Merge("acc_1", s, true, now)
	if got := strings.Join(fields(err), ","); got != "twilio.authToken" {
		t.Fatalf("a new account without its token: %v (%v)", got, err)
	}

	bad := AccountSettingsInput{
		SMS: platform.Ptr("pigeon"), WhatsApp: platform.Ptr(ProviderCloud), SendRate: platform.Ptr(0),
		Twilio:     &TwilioInput{AccountSID: platform.Ptr("AC12"), AuthToken: platform.Ptr("short"), MessagingServiceSID: platform.Ptr("MGxyz")},
		Cloud:      &CloudInput{PhoneNumberID: platform.Ptr("12ab")},
		QuietHours: &QuietHours{Timezone: "Local", Start: "7:00", End: "07:00"},
		Templates: []Template{
			{Moment: "lunch", Language: "es", SMSText: platform.Ptr("x")},
			{Moment: MomentJoined, Language: "de", WhatsAppTemplate: platform.Ptr("Bad-Name"), WhatsAppLanguage: platform.Ptr("spanish")},
			{Moment: MomentJoined, Language: "en", SMSText: platform.Ptr("{code} {station}")},
			{Moment: MomentJoined, Language: "en", SMSText: platform.Ptr("{code}")},
			{Moment: MomentCalled, Language: "en"},
		},
	}
	_, err = bad.Merge("acc_1", AccountSettings{}, false, now)
	got := strings.Join(fields(err), ",")
	for _, want := range []string{"sms", "sendRate", "twilio.accountSid", "twilio.authToken", "twilio.messagingServiceSid",
		"whatsappCloud.phoneNumberId", "whatsappCloud.token", "whatsappCloud.appSecret", "quietHours.timezone", "quietHours.start",
		"templates[0].moment", "templates[1].language", "templates[1].whatsappTemplate", "templates[1].whatsappLanguage",
		"templates[2].smsText", "templates[3]", "templates[4]"} {
		if !strings.Contains(","+got+",", ","+want+",") {
			t.Errorf("the error does not name %s: %s", want, got)
		}
	}
	// A channel sent through a provider the settings do not hold.
	_, err = AccountSettingsInput{WhatsApp: platform.Ptr(ProviderTwilio)}.Merge("acc_1", AccountSettings{}, false, now)
	if got := strings.Join(fields(err), ","); got != "whatsapp" {
		t.Fatalf("whatsapp through twilio without twilio: %s", got)
	}
	wa := AccountSettingsInput{SMS: platform.Ptr(ProviderTwilio),
		Twilio: &TwilioInput{AccountSID: &sid, AuthToken: platform.Ptr("secret-token"), WhatsAppFrom: platform.Ptr("+14155238886")}}
	if _, err := wa.Merge("acc_1", AccountSettings{}, false, now); strings.Join(fields(err), ",") != "sms" {
		t.Fatalf("SMS through a Twilio account with only a WhatsApp sender: %v", err)
	}
}

func TestAccountWording(t *testing.T) {
	a := &AccountSettings{Templates: []Template{{Moment: MomentCalled, Language: "es", SMSText: platform.Ptr("Turno {code}: {station}"),
		WhatsAppTemplate: platform.Ptr("turno_llamado"), WhatsAppLanguage: platform.Ptr("es_MX")}}}
	m := Message{Moment: MomentCalled, Language: "es", Channel: ChannelSMS, Params: map[string]string{"code": "A1", "station": "Caja 2"}}
	out := Outgoing{Body: "built-in", Template: TemplateName(MomentCalled)}
	wording(a, m, &out)
	if out.Body != "Turno A1: Caja 2" || out.Template != "turno_llamado" || out.TemplateLanguage != "es_MX" {
		t.Fatalf("wording: %+v", out)
	}
	// Another language, or no settings: the built-in wording.
	m.Language = "pt"
	out = Outgoing{Body: "built-in", Template: TemplateName(MomentCalled)}
	wording(a, m, &out)
	wording(nil, m, &out)
	if out.Body != "built-in" || out.Template != "qms_called" || out.TemplateLanguage != "" {
		t.Fatalf("fallback wording: %+v", out)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// denyAll is a send-rate window that is always full until at.
type denyAll struct {
	at    time.Time
	calls int
}

func (d *denyAll) Allow(context.Context, string, int, time.Time) (bool, time.Time, error) {
	d.calls++
	return false, d.at, nil
}

// TestHoldInTheSendPath: the gate Attempt runs before the provider call
// defers a reminder inside the account's quiet hours to their end, lets
// every other moment go, and holds a message over the send rate until the
// window frees; an account without settings is never held.
func TestHoldInTheSendPath(t *testing.T) {
	ctx := context.Background()
	madrid, _ := time.LoadLocation("Europe/Madrid")
	night := time.Date(2026, 11, 26, 23, 0, 0, 0, madrid)
	lim := &denyAll{at: night.Add(40 * time.Second)}
	s := &Decider{clock: fixedClock(night), log: slog.New(slog.DiscardHandler), acc: accountParts{limiter: lim}}
	quiet := &AccountSettings{QuietHours: &QuietHours{Timezone: "Europe/Madrid", Start: "21:00", End: "08:00"}}

	at, why, err := s.hold(ctx, quiet, Message{Moment: MomentReminder, AccountID: "acc"})
	if err != nil || !at.Equal(time.Date(2026, 11, 27, 8, 0, 0, 0, madrid)) || !strings.Contains(why, "quiet hours") {
		t.Fatalf("a reminder at 23:00: %v %q %v", at, why, err)
	}
	if at, _, _ := s.hold(ctx, quiet, Message{Moment: MomentCalled, AccountID: "acc"}); !at.IsZero() {
		t.Fatalf("a call inside the quiet hours is held until %v", at)
	}
	if at, _, _ := s.hold(ctx, nil, Message{Moment: MomentReminder, AccountID: "acc"}); !at.IsZero() || lim.calls != 0 {
		t.Fatalf("an account without settings is held until %v (%d rate calls)", at, lim.calls)
	}
	rated := &AccountSettings{SendRate: platform.Ptr(10), QuietHours: quiet.QuietHours}
	at, why, _ = s.hold(ctx, rated, Message{Moment: MomentCalled, AccountID: "acc"})
	if !at.Equal(lim.at) || !strings.Contains(why, "send rate (10 a minute)") || lim.calls != 1 {
		t.Fatalf("over the rate: %v %q (%d calls)", at, why, lim.calls)
	}
	// A reminder in the quiet hours spends no rate: it waits first.
	if _, why, _ := s.hold(ctx, rated, Message{Moment: MomentReminder, AccountID: "acc"}); !strings.Contains(why, "quiet") || lim.calls != 1 {
		t.Fatalf("a quiet reminder: %q (%d calls)", why, lim.calls)
	}
}
