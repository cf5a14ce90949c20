package notify

import (
	"slices"
	"strconv"

	"github.com/qms-dev/qms/core/platform"
)

// QueueSettings are a queue's notification settings
// (PUT /api/v1/queues/{queueId}/notifications). Every field is optional:
// nil keeps the operator's default (Defaults), so a queue that never set
// them behaves as configured and v1 clients see nothing new.
type QueueSettings struct {
	// Moments are the moments that send a message.
	Moments *[]string `json:"moments"`
	// NearFrontAhead sends near_front when at most this many turns are
	// ahead; NearFrontMinutes when the estimated wait is at most this
	// many minutes. Either may trigger; 0 turns a trigger off.
	NearFrontAhead   *int `json:"nearFrontAhead"`
	NearFrontMinutes *int `json:"nearFrontMinutes"`
	// SMS allows SMS for customers who did not ask for WhatsApp.
	SMS *bool `json:"sms"`
	// WhatsAppFallbackSMS sends an SMS when WhatsApp refused the message.
	WhatsAppFallbackSMS *bool `json:"whatsappFallbackSms"`
	// Language is the messages' language (one of the screens' four).
	Language *string `json:"language"`
	// ReminderMinutes is how long before its slot starts an appointment
	// hears its reminder (appointment_reminder).
	ReminderMinutes *int `json:"reminderMinutes"`
}

// Settings are the settings in effect for one queue.
type Settings struct {
	Moments             []string `json:"moments"`
	NearFrontAhead      int      `json:"nearFrontAhead"`
	NearFrontMinutes    int      `json:"nearFrontMinutes"`
	SMS                 bool     `json:"sms"`
	WhatsAppFallbackSMS bool     `json:"whatsappFallbackSms"`
	Language            string   `json:"language"`
	ReminderMinutes     int      `json:"reminderMinutes"`
}

// Languages are the messages' languages: the screens' four.
var Languages = []string{"en", "es", "pt", "fr"}

// Defaults are the settings of a queue that set none: every moment but
// the appointment reminder (appointments took a phone before qms sent
// anything, so a queue asks for reminders), near the front at 3 turns
// ahead, SMS allowed, no fallback, English, a reminder an hour before.
func Defaults() Settings {
	return Settings{
		Moments:        []string{MomentJoined, MomentNearFront, MomentCalled, MomentCalledAgain, MomentNoShow, MomentCancelled, MomentForwarded},
		NearFrontAhead: 3, SMS: true, Language: "en", ReminderMinutes: DefaultReminderMinutes,
	}
}

// DefaultReminderMinutes is the reminder's lead time when neither the
// queue nor the operator set one; MaxReminderMinutes bounds it (two days).
const (
	DefaultReminderMinutes = 60
	MaxReminderMinutes     = 2880
)

// On reports whether moment m sends a message.
func (s Settings) On(m string) bool { return slices.Contains(s.Moments, m) }

// Apply lays q over s.
func (s Settings) Apply(q QueueSettings) Settings {
	if q.Moments != nil {
		s.Moments = slices.Clone(*q.Moments)
	}
	s.NearFrontAhead = platform.Deref(q.NearFrontAhead, s.NearFrontAhead)
	s.NearFrontMinutes = platform.Deref(q.NearFrontMinutes, s.NearFrontMinutes)
	s.SMS = platform.Deref(q.SMS, s.SMS)
	s.WhatsAppFallbackSMS = platform.Deref(q.WhatsAppFallbackSMS, s.WhatsAppFallbackSMS)
	s.Language = platform.Deref(q.Language, s.Language)
	s.ReminderMinutes = platform.Deref(q.ReminderMinutes, s.ReminderMinutes)
	return s
}

// Validate reports every field of q that is out of bounds.
func (q QueueSettings) Validate() error {
	var v platform.Validator
	if q.Moments != nil {
		for i, m := range *q.Moments {
			v.OneOf("moments["+strconv.Itoa(i)+"]", m, Moments...)
		}
	}
	if q.NearFrontAhead != nil {
		v.Range("nearFrontAhead", *q.NearFrontAhead, 0, 50)
	}
	if q.NearFrontMinutes != nil {
		v.Range("nearFrontMinutes", *q.NearFrontMinutes, 0, 240)
	}
	if q.Language != nil {
		v.OneOf("language", *q.Language, Languages...)
	}
	if q.ReminderMinutes != nil {
		v.Range("reminderMinutes", *q.ReminderMinutes, 1, MaxReminderMinutes)
	}
	return v.Err()
}

// near reports whether a turn with ahead turns before it and an estimate
// of minutes (nil: none) is near the front.
func (s Settings) near(ahead int, minutes *int) bool {
	return (s.NearFrontAhead > 0 && ahead < s.NearFrontAhead) ||
		(s.NearFrontMinutes > 0 && minutes != nil && *minutes <= s.NearFrontMinutes)
}
