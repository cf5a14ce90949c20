// Package notify is the customer notifications module: the messages a
// customer who left a phone number receives when their turn reaches a
// moment (joined, near the front, called, ...), sent by SMS or WhatsApp
// through a provider chosen by configuration (the Sender port, adapters in
// adapters/notifier), their delivery status as the provider reports it, and
// the customer's replies (STOP, START, LEAVE, HERE).
//
// A message is decided inside the transaction of the turn change that
// calls for it: its row, keyed by turn, moment and occurrence, and the job
// that sends it commit or roll back with the change, so a committed change
// always gets its message and a repeated decision (a retried transaction,
// a replayed job) finds the row and sends nothing more. The job sends only
// while the message still has a point (a "near the front" for a turn that
// was already called is dropped), and retries with backoff when the
// provider answers 429 or 5xx.
package notify

import (
	"encoding/json"
	"log/slog"

	"strconv"
	"time"
)

// Moments a turn can be told about.
const (
	MomentJoined      = "joined"
	MomentNearFront   = "near_front"
	MomentCalled      = "called"
	MomentCalledAgain = "called_again"
	MomentNoShow      = "no_show"
	MomentCancelled   = "cancelled"
	MomentForwarded   = "forwarded"
	MomentReminder    = "appointment_reminder"
)

// Moments lists every moment, in a turn's order.
var Moments = []string{MomentJoined, MomentNearFront, MomentCalled, MomentCalledAgain, MomentNoShow,
	MomentCancelled, MomentForwarded, MomentReminder}

// Channels a message goes through.
const (
	ChannelSMS      = "SMS"
	ChannelWhatsApp = "WHATSAPP"
)

// Statuses of a message. QUEUED is ours (scheduled, not accepted yet); the
// provider's statuses follow (SENT once it accepted the message); DROPPED,
// SUPPRESSED and FAILED end a message without a delivery.
const (
	StatusQueued      = "QUEUED"
	StatusSent        = "SENT"
	StatusDelivered   = "DELIVERED"
	StatusRead        = "READ"
	StatusUndelivered = "UNDELIVERED"
	StatusFailed      = "FAILED"
	// StatusDropped: the message lost its point before it was sent (the
	// turn moved on); it is not sent late.
	StatusDropped = "DROPPED"
	// StatusSuppressed: the number replied STOP to the account.
	StatusSuppressed = "SUPPRESSED"
)

// rank orders statuses so a late or repeated callback never moves a
// message back: a status applies only over one of lower rank.
func rank(status string) int {
	switch status {
	case StatusQueued:
		return 0
	case StatusSent:
		return 1
	case StatusDelivered, StatusUndelivered:
		return 2
	case StatusRead:
		return 3
	default: // FAILED, DROPPED, SUPPRESSED: ours, final
		return 4
	}
}

// Final reports whether nothing will be sent for a message in status s any
// more (its job has nothing left to do).
func Final(s string) bool { return s != StatusQueued }

// Error codes of a message that failed (Message.ErrorCode), beside the
// provider's own codes.
const (
	ErrInvalidNumber    = "INVALID_NUMBER"
	ErrOptedOut         = "OPTED_OUT"
	ErrRejected         = "REJECTED"
	ErrRetriesExhausted = "RETRIES_EXHAUSTED"
	ErrLostPoint        = "LOST_POINT"
)

// Job kinds and queue of the module.
const (
	JobSend = "notify.send"
	// JobLine looks at a run's waiting line for turns near the front.
	JobLine  = "notify.line"
	JobQueue = "notify"
)

// EventStatus is the event raised when a message changes status.
const EventStatus = "notification.status"

// Message is one message to one turn's customer.
type Message struct {
	ID        string `json:"id"`
	AccountID string `json:"-"`
	// TurnID is the turn the message is about, AppointmentID the
	// appointment (the reminder): exactly one is set, the other is null
	// in the API (MarshalJSON).
	TurnID        string `json:"turnId"`
	AppointmentID string `json:"appointmentId"`
	QueueID       string `json:"queueId"`
	RunID         string `json:"-"`
	Moment        string `json:"moment"`
	// Occurrence tells apart the messages of one moment of one turn (the
	// second call's called_again, a near_front re-armed): with TurnID and
	// Moment it is the message's key.
	Occurrence int    `json:"occurrence"`
	Channel    string `json:"channel"`
	// To is the E.164 number; the API shows it masked (ToMasked).
	To       string `json:"-"`
	ToMasked string `json:"to"`
	Language string `json:"language"`
	// Params are the values of the moment's template (code, station, link,
	// ahead, minutes), fixed when the message is decided.
	Params   map[string]string `json:"-"`
	Body     string            `json:"body"`
	Provider string            `json:"provider"`
	// ProviderMessageID is the provider's id (Twilio's SID, WhatsApp's
	// wamid), set once it accepted the message.
	ProviderMessageID *string    `json:"providerMessageId"`
	Status            string     `json:"status"`
	ErrorCode         *string    `json:"errorCode"`
	Error             *string    `json:"error"`
	Attempts          int        `json:"attempts"`
	FallbackOf        *string    `json:"fallbackOf"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         time.Time  `json:"updatedAt"`
	SentAt            *time.Time `json:"sentAt"`
}

// MarshalJSON writes the message as the API shows it: turnId null for an
// appointment's message, appointmentId null for a turn's.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	return json.Marshal(struct {
		plain
		TurnID        *string `json:"turnId"`
		AppointmentID *string `json:"appointmentId"`
	}{plain(m), orNull(m.TurnID), orNull(m.AppointmentID)})
}

// Key is the message's uniqueness key: one message per turn, moment and
// occurrence (a fallback adds its channel); an appointment's reminder is
// keyed by the appointment and its slot's start (reminderKey).
func (m Message) Key() string {
	k := m.TurnID + ":" + m.Moment + ":" + strconv.Itoa(m.Occurrence)
	if m.AppointmentID != "" {
		k = reminderKey(m)
	}
	if m.FallbackOf != nil {
		k += ":" + m.Channel
	}
	return k
}

// Mask hides all but the country code's first digits and the last two of
// a number, for logs and answers: +34600123456 → +34*******56.
func Mask(phone string) string {
	if len(phone) <= 5 {
		return "***"
	}
	head := 3
	b := []byte(phone)
	for i := head; i < len(b)-2; i++ {
		b[i] = '*'
	}
	return string(b)
}

// Phone is a number that hides itself from logs.
type Phone string

// LogValue masks the number in slog.
func (p Phone) LogValue() slog.Value { return slog.StringValue(Mask(string(p))) }

// SendArgs are the arguments of a JobSend job.
type SendArgs struct {
	MessageID string `json:"messageId"`
}

// LineArgs are the arguments of a JobLine job.
type LineArgs struct {
	AccountID string `json:"accountId"`
	RunID     string `json:"runId"`
	QueueID   string `json:"queueId"`
	// Joined is the turn whose joining called for the look, if any.
	Joined string `json:"joined,omitempty"`
}

// StatusChanged is the data of notification.status. TurnID is null for
// an appointment's message, AppointmentID for a turn's.
type StatusChanged struct {
	AppointmentID  *string `json:"appointmentId"`
	Channel        string  `json:"channel"`
	ErrorCode      *string `json:"errorCode"`
	Moment         string  `json:"moment"`
	NotificationID string  `json:"notificationId"`
	QueueID        string  `json:"queueId"`
	QueueRunID     string  `json:"queueRunId"`
	Status         string  `json:"status"`
	TurnID         *string `json:"turnId"`
}

// EventName names the event: notification.status.
func (StatusChanged) EventName() string { return EventStatus }
