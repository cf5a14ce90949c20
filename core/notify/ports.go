package notify

import (
	"context"
	"fmt"
	"time"
)

// Sender sends one message through a provider (adapters/notifier: the
// log outbox, Twilio, the WhatsApp Cloud API).
type Sender interface {
	// Provider names the provider ("log", "twilio", "whatsapp"): status
	// callbacks find their message by it and the provider's id.
	Provider() string
	// Send hands out to the provider. A refusal is a *SendError.
	Send(ctx context.Context, out Outgoing) (Receipt, error)
}

// Outgoing is one message as a provider needs it.
type Outgoing struct {
	MessageID string
	Channel   string
	// To is E.164.
	To   string
	Body string
	// Template is the template's name (WhatsApp: outside the customer's
	// 24-hour window only approved templates may be sent), Language its
	// language, Params its body parameters in order.
	Template string
	Language string
	// TemplateLanguage, when set, is the provider's code of the
	// template's language (an account's own template: es_MX, pt_BR...).
	TemplateLanguage string
	Params           []string
}

// Receipt is the provider's acceptance.
type Receipt struct {
	ProviderMessageID string
}

// SendError is a provider's refusal. Code is ours (ErrInvalidNumber,
// ErrOptedOut, ErrRejected); ProviderCode the provider's (Twilio 21211,
// WhatsApp 131026, ...). Retryable errors (429, 5xx, a connection that
// failed) are retried with backoff; the rest end the message FAILED.
type SendError struct {
	Code         string
	ProviderCode string
	Message      string
	HTTPStatus   int
	Retryable    bool
	// RetryAfter is the provider's Retry-After, when it said one.
	RetryAfter time.Duration
}

func (e *SendError) Error() string {
	return fmt.Sprintf("notify: provider refused (%d %s/%s): %s", e.HTTPStatus, e.Code, e.ProviderCode, e.Message)
}

// Repository stores messages, the suppression list, the near-the-front
// state of waiting turns and the queues' notification settings.
type Repository interface {
	// Insert stores m unless a message with its Key exists; it reports
	// whether m was stored.
	Insert(ctx context.Context, m Message) (bool, error)
	Get(ctx context.Context, id string) (Message, error)
	// GetForUpdate reads and locks a message for the rest of the unit
	// of work.
	GetForUpdate(ctx context.Context, id string) (Message, error)
	Update(ctx context.Context, m Message) error
	// ByProviderID finds, and locks, the message a provider knows as id.
	ByProviderID(ctx context.Context, provider, id string) (Message, error)
	ListByTurn(ctx context.Context, turnID string) ([]Message, error)
	// ListByAppointment lists an appointment's messages (its reminder),
	// oldest first.
	ListByAppointment(ctx context.Context, appointmentID string) ([]Message, error)
	// LatestTo is the newest message sent to phone (any account): a reply
	// from that number concerns its turn.
	LatestTo(ctx context.Context, phone string) (Message, error)
	SetSuppressed(ctx context.Context, accountID, phone string, on bool, at time.Time) error
	Suppressed(ctx context.Context, accountID, phone string) (bool, error)
	Near(ctx context.Context, turnID string) (NearState, error)
	PutNear(ctx context.Context, s NearState) error
	QueueSettings(ctx context.Context, queueID string) (QueueSettings, bool, error)
	PutQueueSettings(ctx context.Context, accountID, queueID string, s QueueSettings) error
	// ClearPhones forgets the numbers of messages created before cutoff
	// (privacy: turns finish, their numbers go), but for messages still
	// QUEUED (an appointment's reminder is due long after its booking);
	// it returns how many.
	ClearPhones(ctx context.Context, before time.Time, limit int) (int, error)
	// ClearTurnPhones forgets the phone of turns that finished before
	// cutoff; it returns how many.
	ClearTurnPhones(ctx context.Context, finishedBefore time.Time, limit int) (int, error)
	// ClearAppointmentPhones forgets the phone of appointments that
	// finished (completed, cancelled, no-show) before cutoff; it returns
	// how many.
	ClearAppointmentPhones(ctx context.Context, finishedBefore time.Time, limit int) (int, error)
}

// NearState is where a waiting turn stands with its near-the-front
// message: Sent once the message of Occurrence was decided; a turn that
// moves back past the threshold is re-armed (Sent false, the next
// occurrence follows).
type NearState struct {
	TurnID     string
	AccountID  string
	Occurrence int
	Sent       bool
}

// Turns is what the module needs of the turns module.
type Turns interface {
	// Now is the turn as it stands.
	Now(ctx context.Context, accountID, turnID string) (TurnNow, error)
	// Waiting lists the waiting turns with a phone among a run's first
	// limit waiting turns (by arrival), with their positions, and their
	// estimates when withWait.
	Waiting(ctx context.Context, accountID, queueID, runID string, limit int, withWait bool) ([]Waiting, error)
	// Leave cancels the turn for its customer; Arrive marks it arrived.
	Leave(ctx context.Context, accountID, turnID string) error
	Arrive(ctx context.Context, accountID, turnID string) error
}

// TurnNow is a turn's state when its message is about to be sent.
type TurnNow struct {
	Status    string
	CallCount int
	Finished  bool
	// Station is the label of the station the turn is called to, "" for
	// none.
	Station string
}

// Waiting is a waiting turn with a phone and its place.
type Waiting struct {
	TurnChange
	Position    int
	WaitMinutes *int
}

// Links makes the link to a turn's live ticket page.
type Links interface {
	TicketURL(ctx context.Context, accountID, turnID, language string) (string, error)
}

// Normalizer turns what a customer typed into E.164.
type Normalizer func(raw, region string) (string, error)

// Appointments is what the reminder needs of the appointments module.
type Appointments interface {
	// AppointmentNow is the appointment as it stands (NotFound when it
	// is gone).
	AppointmentNow(ctx context.Context, accountID, appointmentID string) (AppointmentNow, error)
}

// AppointmentNow is an appointment's state when its reminder is about to
// be sent.
type AppointmentNow struct {
	Status    string
	SlotStart time.Time
}

// AccountRepository stores the accounts' own settings (their secrets
// sealed at rest) and what the module keeps of a customer: the language
// of their turn.
type AccountRepository interface {
	AccountSettings(ctx context.Context, accountID string) (AccountSettings, bool, error)
	PutAccountSettings(ctx context.Context, s AccountSettings) error
	DeleteAccountSettings(ctx context.Context, accountID string) error
	// PutTurnLanguage records the language the customer of a turn used
	// (the join page's); TurnLanguage reads it ("" for none).
	PutTurnLanguage(ctx context.Context, accountID, turnID, language string) error
	TurnLanguage(ctx context.Context, turnID string) (string, error)
	// ClearTurnLanguages forgets the languages recorded before cutoff, at
	// most limit; it returns how many.
	ClearTurnLanguages(ctx context.Context, before time.Time, limit int) (int, error)
	// LatestToInAccount is the newest message the account sent to phone.
	LatestToInAccount(ctx context.Context, accountID, phone string) (Message, error)
}

// Limiter spends one of an account's messages a minute: allowed, or the
// time a message may go (a shared window, so every process counts).
type Limiter interface {
	Allow(ctx context.Context, key string, perMinute int, now time.Time) (allowed bool, retryAt time.Time, err error)
}
