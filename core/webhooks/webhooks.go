// Package webhooks is the webhooks module (spec sections 2.9, 4.9 and 6):
// endpoints an account subscribes to events, and the signed deliveries of
// those events with their retries and their log.
//
// The module is an events.Subscriber: inside the transaction of the change
// that raised an event it writes one delivery per subscribed endpoint and
// schedules the job of its first attempt, so a committed change always gets
// its deliveries and a rolled-back one never does. Each attempt is a job of
// its own; a failed attempt schedules the next one on the published retry
// schedule (Schedule), so a slow receiver holds up only its own deliveries.
package webhooks

import (
	"log/slog"
	"time"
)

// Statuses of a delivery.
const (
	// StatusPending: no attempt has ended yet.
	StatusPending = "PENDING"
	// StatusSucceeded: an attempt got a 2xx within ResponseTimeout.
	StatusSucceeded = "SUCCEEDED"
	// StatusFailed: the last attempt failed; NextAttemptAt says when the
	// next one runs, nil when the schedule is exhausted.
	StatusFailed = "FAILED"
)

// Limits of the module.
const (
	// MaxURLLength bounds an endpoint's url (spec 2.9).
	MaxURLLength = 500
	// MaxEndpoints bounds an account's endpoints: each event fans out to
	// every subscribed endpoint, so the bound keeps one change from
	// turning into an unbounded burst of outbound requests.
	MaxEndpoints = 20
	// RecentDeliveries is how many deliveries the log lists (spec 6 rule 5).
	RecentDeliveries = 30
	// ResponseTimeout is how long a receiver has to answer 2xx (spec 6
	// rule 2): connecting, sending and the response head all count.
	ResponseTimeout = 10 * time.Second
	// SecretPrefix leads every signing secret (spec 2.9).
	SecretPrefix = "whsec_"
)

// JobDeliver is the job kind of one delivery attempt.
const JobDeliver = "webhook.deliver"

// JobQueue is the job queue of delivery attempts: apart from every other
// job, with workers of their own (webhooks.workers), so a burst of
// deliveries neither waits behind nor holds up the rest.
const JobQueue = "webhooks"

// Codes raised by this module.
const (
	CodeTooManyEndpoints = "TOO_MANY_WEBHOOK_ENDPOINTS"
)

// Endpoint is a subscription: a url that receives the listed events.
type Endpoint struct {
	ID        string   `json:"id"`
	AccountID string   `json:"-"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	// Secret keys the signatures. It never leaves the service but once,
	// in the answer to the creation.
	Secret    Secret    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
}

// Subscribes reports whether the endpoint wants the event.
func (e Endpoint) Subscribes(event string) bool {
	for _, n := range e.Events {
		if n == event {
			return true
		}
	}
	return false
}

// CreatedEndpoint is the answer to a creation: the endpoint and, this once,
// its signing secret.
type CreatedEndpoint struct {
	Endpoint
	SigningSecret string `json:"secret"`
}

// Delivery is one event sent to one endpoint, with the outcome of its
// latest attempt. Its id is the body's id and the X-Service-Delivery
// header, the same on every attempt, so receivers deduplicate by it.
type Delivery struct {
	ID                 string     `json:"id"`
	AccountID          string     `json:"-"`
	EndpointID         string     `json:"endpointId"`
	EventID            string     `json:"eventId"`
	Event              string     `json:"event"`
	Status             string     `json:"status"`
	Attempts           int        `json:"attempts"`
	LastResponseStatus *int       `json:"lastResponseStatus"`
	LastError          *string    `json:"lastError"`
	LastAttemptAt      *time.Time `json:"lastAttemptAt"`
	NextAttemptAt      *time.Time `json:"nextAttemptAt"`
	CreatedAt          time.Time  `json:"createdAt"`
	// Body is the exact request body, built once when the event was
	// raised: every attempt sends and signs these bytes.
	Body []byte `json:"-"`
	// RetryToken names the scheduled attempt that may continue the retry
	// schedule: only the job carrying it schedules the next attempt, so a
	// job run twice (a crash after its attempt was recorded) does not fork
	// the schedule. Empty when no automatic attempt is due.
	RetryToken string `json:"-"`
}

// Secret is a signing secret. Its String, GoString, LogValue and JSON forms
// hide it, so a value that carries one can be printed or logged without
// handing it out; Reveal returns it.
type Secret string

const redacted = "whsec_[redacted]"

// Reveal returns the secret itself, for signing and for the one answer
// that shows it.
func (s Secret) Reveal() string { return string(s) }

// String hides the secret.
func (s Secret) String() string { return redacted }

// GoString hides the secret from %#v.
func (s Secret) GoString() string { return redacted }

// LogValue hides the secret from slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON hides the secret from encoders.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// AttemptArgs are the arguments of a JobDeliver job.
type AttemptArgs struct {
	DeliveryID string `json:"deliveryId"`
	// Token is the delivery's RetryToken when the job was scheduled; empty
	// for a redelivery asked for by the account.
	Token string `json:"token,omitempty"`
	// N is the attempt's position in the retry schedule (1 is the first
	// attempt); 0 for a redelivery.
	N int `json:"n,omitempty"`
}
