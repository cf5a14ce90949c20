package notify

import (
	"regexp"
	"slices"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Providers of an account's channels (AccountSettings.SMS, .WhatsApp).
const (
	ProviderTwilio = "twilio"
	ProviderCloud  = "cloud"
	ProviderLog    = "log"
	ProviderNone   = "none"
)

// AccountSettings are one business's own messaging settings
// (PUT /api/v1/notification-settings): its provider accounts, its
// templates, its quiet hours and its send rate. An account without them
// sends through the operator's configuration (notify.*), which stays the
// default of a single-business install. The secrets (Twilio's auth token,
// the Cloud API's token, app secret and verify token) are sealed at rest
// by the repository and never leave the service in an answer
// (AccountSettingsView).
type AccountSettings struct {
	AccountID string
	// SMS and WhatsApp name the provider of each channel; nil: the
	// account's own provider when it has one for the channel, else the
	// operator's.
	SMS      *string
	WhatsApp *string
	Twilio   *TwilioAccount
	Cloud    *CloudAccount
	// Templates override, per moment and language, the WhatsApp template
	// and the SMS text.
	Templates  []Template
	QuietHours *QuietHours
	// SendRate is the most messages a minute the account sends, across
	// processes; nil: no bound but the provider's.
	SendRate  *int
	UpdatedAt time.Time
}

// TwilioAccount is a business's Twilio account and senders.
type TwilioAccount struct {
	AccountSID          string `json:"accountSid"`
	AuthToken           string `json:"authToken"`
	From                string `json:"from,omitempty"`
	MessagingServiceSID string `json:"messagingServiceSid,omitempty"`
	WhatsAppFrom        string `json:"whatsappFrom,omitempty"`
}

// CloudAccount is a business's WhatsApp Business Cloud API number.
type CloudAccount struct {
	PhoneNumberID string `json:"phoneNumberId"`
	Token         string `json:"token"`
	AppSecret     string `json:"appSecret"`
	VerifyToken   string `json:"verifyToken,omitempty"`
}

// Template is an account's wording of one moment in one language: the
// WhatsApp template registered in its WhatsApp Manager (name and Meta's
// language code), and an SMS text with the moment's placeholders.
type Template struct {
	Moment           string  `json:"moment"`
	Language         string  `json:"language"`
	WhatsAppTemplate *string `json:"whatsappTemplate"`
	WhatsAppLanguage *string `json:"whatsappLanguage"`
	SMSText          *string `json:"smsText" text:"free"`
}

// AccountSettingsInput is the body of PUT /notification-settings. A
// secret left out (null) keeps the stored one, so a client that read the
// settings (which never show a secret) can write them back; a provider
// block left out removes that provider.
type AccountSettingsInput struct {
	SMS        *string      `json:"sms"`
	WhatsApp   *string      `json:"whatsapp"`
	Twilio     *TwilioInput `json:"twilio"`
	Cloud      *CloudInput  `json:"whatsappCloud"`
	Templates  []Template   `json:"templates"`
	QuietHours *QuietHours  `json:"quietHours"`
	SendRate   *int         `json:"sendRate"`
}

// TwilioInput is the twilio member of the body.
type TwilioInput struct {
	AccountSID          *string `json:"accountSid"`
	AuthToken           *string `json:"authToken"`
	From                *string `json:"from"`
	MessagingServiceSID *string `json:"messagingServiceSid"`
	WhatsAppFrom        *string `json:"whatsappFrom"`
}

// CloudInput is the whatsappCloud member of the body.
type CloudInput struct {
	PhoneNumberID *string `json:"phoneNumberId"`
	Token         *string `json:"token"`
	AppSecret     *string `json:"appSecret"`
	VerifyToken   *string `json:"verifyToken"`
}

// AccountSettingsView is what GET and PUT answer: the settings with each
// secret replaced by whether it is set.
type AccountSettingsView struct {
	// Own is false for an account that set nothing: the operator's
	// configuration serves it.
	Own        bool         `json:"own"`
	SMS        *string      `json:"sms"`
	WhatsApp   *string      `json:"whatsapp"`
	Twilio     *TwilioView  `json:"twilio"`
	Cloud      *CloudView   `json:"whatsappCloud"`
	Templates  []Template   `json:"templates"`
	QuietHours *QuietHours  `json:"quietHours"`
	SendRate   *int         `json:"sendRate"`
	UpdatedAt  *time.Time   `json:"updatedAt"`
	Callbacks  *CallbackURL `json:"callbacks,omitempty"`
}

// TwilioView shows a Twilio account without its auth token.
type TwilioView struct {
	AccountSID          string  `json:"accountSid"`
	AuthTokenSet        bool    `json:"authTokenSet"`
	From                *string `json:"from"`
	MessagingServiceSID *string `json:"messagingServiceSid"`
	WhatsAppFrom        *string `json:"whatsappFrom"`
}

// CloudView shows a Cloud API number without its secrets.
type CloudView struct {
	PhoneNumberID  string `json:"phoneNumberId"`
	TokenSet       bool   `json:"tokenSet"`
	AppSecretSet   bool   `json:"appSecretSet"`
	VerifyTokenSet bool   `json:"verifyTokenSet"`
}

// CallbackURL are the addresses of the account's callbacks, to set in
// its provider's console (the HTTP layer fills them in).
type CallbackURL struct {
	TwilioStatus  string `json:"twilioStatus"`
	TwilioInbound string `json:"twilioInbound"`
	WhatsApp      string `json:"whatsapp"`
}

// View is s as an answer shows it.
func (s AccountSettings) View() AccountSettingsView {
	v := AccountSettingsView{Own: true, SMS: s.SMS, WhatsApp: s.WhatsApp, Templates: s.Templates,
		QuietHours: s.QuietHours, SendRate: s.SendRate, UpdatedAt: &s.UpdatedAt}
	if v.Templates == nil {
		v.Templates = []Template{}
	}
	if t := s.Twilio; t != nil {
		v.Twilio = &TwilioView{AccountSID: t.AccountSID, AuthTokenSet: t.AuthToken != "", From: optional(t.From),
			MessagingServiceSID: optional(t.MessagingServiceSID), WhatsAppFrom: optional(t.WhatsAppFrom)}
	}
	if c := s.Cloud; c != nil {
		v.Cloud = &CloudView{PhoneNumberID: c.PhoneNumberID, TokenSet: c.Token != "", AppSecretSet: c.AppSecret != "",
			VerifyTokenSet: c.VerifyToken != ""}
	}
	return v
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SenderFactory builds the sender of a channel from an account's
// settings; nil settings: the operator's sender. ok is false when the
// channel has no provider.
type SenderFactory func(channel string, s *AccountSettings) (sd Sender, ok bool)

var (
	reTwilioSID   = regexp.MustCompile(`^AC[0-9a-fA-F]{32}$`)
	reMessaging   = regexp.MustCompile(`^MG[0-9a-fA-F]{32}$`)
	reE164        = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	reSender      = regexp.MustCompile(`^(\+[1-9][0-9]{6,14}|[A-Za-z0-9 ]{1,11})$`)
	reDigits      = regexp.MustCompile(`^[0-9]{1,30}$`)
	reTemplate    = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)
	reMetaLang    = regexp.MustCompile(`^[a-z]{2,3}(_[A-Z]{2})?$`)
	rePlaceholder = regexp.MustCompile(`\{([A-Za-z_]+)\}`)
)

// Merge validates in against the stored settings (ok false: none) and
// returns the settings to store. Every field in error is named.
func (in AccountSettingsInput) Merge(accountID string, old AccountSettings, ok bool, now time.Time) (AccountSettings, error) {
	var v platform.Validator
	s := AccountSettings{AccountID: accountID, SMS: in.SMS, WhatsApp: in.WhatsApp, Templates: in.Templates,
		QuietHours: in.QuietHours, SendRate: in.SendRate, UpdatedAt: now}
	if !ok {
		old = AccountSettings{}
	}
	if in.Twilio != nil {
		s.Twilio = in.Twilio.merge(&v, old.Twilio)
	}
	if in.Cloud != nil {
		s.Cloud = in.Cloud.merge(&v, old.Cloud)
	}
	if in.SMS != nil && v.OneOf("sms", *in.SMS, ProviderTwilio, ProviderLog, ProviderNone) &&
		*in.SMS == ProviderTwilio && (s.Twilio == nil || s.Twilio.From == "" && s.Twilio.MessagingServiceSID == "") {
		v.Fail("sms", "requires", "twilio needs twilio.from or twilio.messagingServiceSid")
	}
	if in.WhatsApp != nil && v.OneOf("whatsapp", *in.WhatsApp, ProviderTwilio, ProviderCloud, ProviderLog, ProviderNone) {
		switch {
		case *in.WhatsApp == ProviderTwilio && (s.Twilio == nil || s.Twilio.WhatsAppFrom == ""):
			v.Fail("whatsapp", "requires", "twilio needs twilio.whatsappFrom")
		case *in.WhatsApp == ProviderCloud && s.Cloud == nil:
			v.Fail("whatsapp", "requires", "cloud needs the whatsappCloud member")
		}
	}
	v.MaxItems("templates", len(in.Templates), len(Moments)*len(Languages))
	seen := map[string]bool{}
	for i, t := range in.Templates {
		t.validate(&v, platform.Index("templates", i))
		k := t.Moment + ":" + t.Language
		if seen[k] {
			v.Fail(platform.Index("templates", i), "unique", "a second template for %s in %s", t.Moment, t.Language)
		}
		seen[k] = true
	}
	if in.QuietHours != nil {
		in.QuietHours.validate(&v, "quietHours")
	}
	v.OptRange("sendRate", in.SendRate, 1, 6000)
	return s, v.Err()
}

func (in TwilioInput) merge(v *platform.Validator, old *TwilioAccount) *TwilioAccount {
	t := &TwilioAccount{AccountSID: platform.Deref(in.AccountSID, ""), From: platform.Deref(in.From, ""),
		MessagingServiceSID: platform.Deref(in.MessagingServiceSID, ""), WhatsAppFrom: platform.Deref(in.WhatsAppFrom, "")}
	if v.Required("twilio.accountSid", in.AccountSID != nil) && !reTwilioSID.MatchString(t.AccountSID) {
		v.Fail("twilio.accountSid", "pattern", "must be a Twilio account SID (AC and 32 hexadecimal digits)")
	}
	switch {
	case in.AuthToken != nil:
		v.Len("twilio.authToken", *in.AuthToken, 8, 200)
		t.AuthToken = *in.AuthToken
	case old != nil && old.AccountSID == t.AccountSID:
		// Left out: the stored token of the same account stays.
		t.AuthToken = old.AuthToken
	default:
		v.Fail("twilio.authToken", "required", "is required for a new Twilio account (it is never shown back)")
	}
	if t.From != "" && !reSender.MatchString(t.From) {
		v.Fail("twilio.from", "pattern", "must be an E.164 number or an alphanumeric sender id of at most 11 characters")
	}
	if t.MessagingServiceSID != "" && !reMessaging.MatchString(t.MessagingServiceSID) {
		v.Fail("twilio.messagingServiceSid", "pattern", "must be a messaging service SID (MG and 32 hexadecimal digits)")
	}
	if t.WhatsAppFrom != "" && !reE164.MatchString(t.WhatsAppFrom) {
		v.Fail("twilio.whatsappFrom", "pattern", "must be an E.164 number (+ and country code)")
	}
	if t.From == "" && t.MessagingServiceSID == "" && t.WhatsAppFrom == "" {
		v.Fail("twilio.from", "required", "a sender is required: from, messagingServiceSid or whatsappFrom")
	}
	return t
}

func (in CloudInput) merge(v *platform.Validator, old *CloudAccount) *CloudAccount {
	c := &CloudAccount{PhoneNumberID: platform.Deref(in.PhoneNumberID, "")}
	if v.Required("whatsappCloud.phoneNumberId", in.PhoneNumberID != nil) && !reDigits.MatchString(c.PhoneNumberID) {
		v.Fail("whatsappCloud.phoneNumberId", "pattern", "must be the number's id (digits)")
	}
	same := old != nil && old.PhoneNumberID == c.PhoneNumberID
	secret := func(path string, in *string, keep string, required bool) string {
		switch {
		case in != nil:
			v.Len(path, *in, 8, 1000)
			return *in
		case same:
			return keep
		case required:
			v.Fail(path, "required", "is required for a new number (it is never shown back)")
		}
		return ""
	}
	var oldToken, oldSecret, oldVerify string
	if old != nil {
		oldToken, oldSecret, oldVerify = old.Token, old.AppSecret, old.VerifyToken
	}
	c.Token = secret("whatsappCloud.token", in.Token, oldToken, true)
	c.AppSecret = secret("whatsappCloud.appSecret", in.AppSecret, oldSecret, true)
	c.VerifyToken = secret("whatsappCloud.verifyToken", in.VerifyToken, oldVerify, false)
	return c
}

// placeholders are the names a moment's SMS text may use.
func placeholders(moment string) []string {
	p := slices.Clone(templateParams[moment])
	if moment == MomentNearFront {
		p = append(p, "minutes")
	}
	return p
}

func (t Template) validate(v *platform.Validator, path string) {
	okMoment := v.OneOf(platform.Path(path, "moment"), t.Moment, Moments...)
	v.OneOf(platform.Path(path, "language"), t.Language, Languages...)
	if t.WhatsAppTemplate != nil && !reTemplate.MatchString(*t.WhatsAppTemplate) {
		v.Fail(platform.Path(path, "whatsappTemplate"), "pattern", "must be a template name: lower-case letters, digits and _")
	}
	if t.WhatsAppLanguage != nil && !reMetaLang.MatchString(*t.WhatsAppLanguage) {
		v.Fail(platform.Path(path, "whatsappLanguage"), "pattern", "must be a WhatsApp language code such as es or pt_BR")
	}
	if t.SMSText != nil {
		p := platform.Path(path, "smsText")
		v.Len(p, *t.SMSText, 1, 1600)
		if okMoment {
			allowed := placeholders(t.Moment)
			for _, m := range rePlaceholder.FindAllStringSubmatch(*t.SMSText, -1) {
				if !slices.Contains(allowed, m[1]) {
					v.Fail(p, "placeholder", "{%s} is not a placeholder of %s (it has %v)", m[1], t.Moment, allowed)
				}
			}
		}
	}
	if t.WhatsAppTemplate == nil && t.WhatsAppLanguage == nil && t.SMSText == nil {
		v.Fail(path, "required", "a template needs whatsappTemplate, whatsappLanguage or smsText")
	}
}

// template is the account's wording of moment in lang, if it has one.
func (s *AccountSettings) template(moment, lang string) (Template, bool) {
	if s == nil {
		return Template{}, false
	}
	for _, t := range s.Templates {
		if t.Moment == moment && t.Language == lang {
			return t, true
		}
	}
	return Template{}, false
}
