// Package ticket is the customer's live ticket page: an unguessable link,
// made by the API for one turn, that shows that turn alone (its display
// code, queue and branch, status, how many are ahead and the wait range,
// where to go when it is called) and lets the customer leave the queue.
//
// A ticket link is a capability like a display token: only the SHA-256 of
// its value is stored, the value is shown once, and it opens nothing but
// its own turn. It expires ExpireAfter after the turn finished (a reopened
// turn opens it again), so a link found later in a message history shows
// nothing.
package ticket

import (
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// PrefixLink begins every ticket link id; ValuePrefix every link value.
const (
	PrefixLink  = "tkl"
	ValuePrefix = "qmst_"
)

// Codes raised by this module.
const (
	// CodeInvalidTicketLink: the link is unknown. 404.
	CodeInvalidTicketLink = "INVALID_TICKET_LINK"
	// CodeTicketLinkExpired: the turn finished more than ExpireAfter ago. 404.
	CodeTicketLinkExpired = "TICKET_LINK_EXPIRED"
	// CodeTooManyTicketLinks: the turn has MaxLinksPerTurn links. 409.
	CodeTooManyTicketLinks = "TOO_MANY_TICKET_LINKS"
)

// MaxLinksPerTurn bounds the links of one turn (a kiosk retrying, a
// receptionist resending): enough for any honest use.
const MaxLinksPerTurn = 20

// DefaultExpireAfter is how long a link stays open after its turn
// finished: long enough to read the final state, short enough that an old
// message opens nothing.
const DefaultExpireAfter = 2 * time.Hour

// Link is a stored ticket link.
type Link struct {
	ID        string `json:"id"`
	AccountID string `json:"-"`
	TurnID    string `json:"turnId"`
	QueueID   string `json:"-"`
	RunID     string `json:"-"`
	Hash      string `json:"-"`
	// Language is the page's language (display.Languages); null follows
	// the phone's.
	Language  *string   `json:"language"`
	CreatedAt time.Time `json:"createdAt"`
}

// Created is a new link with its value, shown this once, and when it
// expires (null while the turn is not finished).
type Created struct {
	Link
	Value     string     `json:"token"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// CreateInput is the body of a link creation.
type CreateInput struct {
	Language *string `json:"language"`
}

// Ticket is what the page shows: the one turn, and nothing about other
// turns or the account beyond the queue's and branch's public names.
type Ticket struct {
	DisplayCode string       `json:"displayCode"`
	Status      turns.Status `json:"status"`
	Queue       Place        `json:"queue"`
	Branch      Place        `json:"branch"`
	// Ahead is how many turns will be called first (WAITING only).
	Ahead *int `json:"ahead"`
	// WaitMinutes and WaitRange are the turn's wait estimate (WAITING
	// only; the range once the queue has enough measured service times).
	WaitMinutes *int             `json:"waitMinutes"`
	WaitRange   *turns.WaitRange `json:"waitRange"`
	// Station is where to go, once called (null: to the counter).
	Station    *string    `json:"station"`
	CalledAt   *time.Time `json:"calledAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	// RunOpen is false when the queue closed for the day.
	RunOpen bool `json:"runOpen"`
	// CanLeave says whether "leave the queue" applies now (the turn is
	// not finished).
	CanLeave bool `json:"canLeave"`
	// Help is the queue's help (null when it has help off and the turn
	// never asked): whether "I need help" applies now, and the latest
	// request with staff's reply.
	Help *TicketHelp `json:"help"`
	// SecurityCode is the turn's pickup code (turns.SecurityCode) when the
	// queue's arrivalBoard.showSecurity is on; null otherwise.
	SecurityCode *string    `json:"securityCode"`
	Language     *string    `json:"language"`
	ExpiresAt    *time.Time `json:"expiresAt"`
}

// Place names a queue or a branch.
type Place struct {
	Name     string  `json:"name"`
	Subtitle *string `json:"subtitle,omitempty"`
}

// ExpiresAt is when a link of a turn finished at finishedAt expires: nil
// while it is not finished.
func ExpiresAt(finishedAt *time.Time, after time.Duration) *time.Time {
	if finishedAt == nil {
		return nil
	}
	at := finishedAt.Add(after).UTC()
	return &at
}

// newValue returns "qmst_" and 32 base32 characters (160 random bits).
func newValue() string { return platform.NewSecret(ValuePrefix) }

// Hash is how a link value is stored and looked up.
func Hash(value string) string { return platform.HashSecret(value) }

// LooksLikeValue reports whether s has a link's shape; anything else is
// refused without a lookup.
func LooksLikeValue(s string) bool { return platform.LooksLikeSecret(s, ValuePrefix) }
