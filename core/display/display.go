// Package display is the waiting-room display board: display tokens that
// open one queue run's board read-only, and the board itself, what the
// screen shows: the turns being called with their station, the last few
// called, and the queue's arrivalBoard columns.
//
// A display token is a capability, not an API key: it reads one run's
// board and nothing else, needs no scope, and is revoked by the account
// (queues:write). Like API keys, only its SHA-256 hash is stored and the
// value is shown once, when it is made.
package display

import (
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// PrefixToken begins every display token id; TokenValuePrefix every token
// value.
const (
	PrefixToken      = "dsp"
	TokenValuePrefix = "qmsd_"
)

// Codes raised by this module.
const (
	// CodeInvalidDisplayToken: the display token is unknown. 404.
	CodeInvalidDisplayToken = "INVALID_DISPLAY_TOKEN"
	// CodeDisplayTokenRevoked: the display token was revoked. 410.
	CodeDisplayTokenRevoked = "DISPLAY_TOKEN_REVOKED"
	// CodeTooManyDisplayTokens: the run has MaxTokensPerRun live tokens. 409.
	CodeTooManyDisplayTokens = "TOO_MANY_DISPLAY_TOKENS"
)

// MaxTokensPerRun bounds the live (unrevoked) tokens of one run.
const MaxTokensPerRun = 50

// RecentCalls is how many earlier calls the board lists.
const RecentCalls = 6

// Token is a stored display token.
type Token struct {
	ID        string     `json:"id"`
	AccountID string     `json:"-"`
	QueueID   string     `json:"queueId"`
	RunID     string     `json:"queueRunId"`
	Label     *string    `json:"label"`
	Hash      string     `json:"-"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt"`
	Options
}

// Options are how a token's screen behaves; a board's link may still
// override them (?next=, ?speak=, ?lang=) for one screen.
type Options struct {
	// NextUp is how many next-up codes the screen lists (0 to NextUp).
	NextUp int `json:"nextUp"`
	// Speech is whether each call is also spoken.
	Speech bool `json:"speech"`
	// Language is the screen's language (one of Languages); null follows
	// the browser's.
	Language *string `json:"language"`
}

// DefaultOptions are a new token's options: no next-up codes (some places
// prefer not to promise an order), calls spoken, the browser's language.
func DefaultOptions() Options { return Options{Speech: true} }

// Languages are the languages the waiting-room pages speak; each has a
// catalogue of its strings (adapters/http/waitingroom/web/i18n).
var Languages = []string{"en", "es", "pt", "fr"}

// ValidLanguage reports whether s is one of Languages.
func ValidLanguage(s string) bool {
	for _, l := range Languages {
		if l == s {
			return true
		}
	}
	return false
}

// TokenChanged is the internal event (events.Internal: never sent to a
// client, never a webhook) raised in the transaction that revokes a token
// or changes its options. It reaches the boards the token opened through
// the event log, in every process, as the run's events do: a revoked
// board ends at once, a changed one shows its new options, and no board
// re-reads its token while it waits (issue 32).
type TokenChanged struct {
	TokenID string  `json:"tokenId"`
	Revoked bool    `json:"revoked"`
	Options Options `json:"options"`
}

// EventName is the internal event's name.
func (TokenChanged) EventName() string { return "display_token.changed" }

// Revoked reports whether the token was revoked.
func (t Token) Revoked() bool { return t.RevokedAt != nil }

// Created is a new token with its value, shown this once.
type Created struct {
	Token
	// Value is the token itself; only its hash is kept.
	Value string `json:"token"`
}

// CreateInput is the body of a token creation: an optional label naming
// the screen ("Lobby, left"), and its options (DefaultOptions when absent).
type CreateInput struct {
	Label    *string `json:"label" text:"name"`
	NextUp   *int    `json:"nextUp"`
	Speech   *bool   `json:"speech"`
	Language *string `json:"language"`
}

// UpdateInput is the body of a token update: each field present is set;
// label and language may be null (no label; the browser's language).
type UpdateInput struct {
	Label    platform.Patch[string] `json:"label" text:"name"`
	NextUp   platform.Patch[int]    `json:"nextUp"`
	Speech   platform.Patch[bool]   `json:"speech"`
	Language platform.Patch[string] `json:"language"`
}

// newTokenValue returns "qmsd_" and 32 base32 characters (160 random bits).
func newTokenValue() string { return platform.NewSecret(TokenValuePrefix) }

// HashToken is how a token value is stored and looked up.
func HashToken(value string) string { return platform.HashSecret(value) }

// LooksLikeToken reports whether s has a token's shape; anything else is
// refused without a lookup.
func LooksLikeToken(s string) bool { return platform.LooksLikeSecret(s, TokenValuePrefix) }

// Board is what a display screen shows.
type Board struct {
	Queue   BoardQueue `json:"queue"`
	Run     BoardRun   `json:"run"`
	Columns []Column   `json:"columns"`
	// ShowSecurity is the queue's arrivalBoard.showSecurity: the called
	// turns carry their security codes, shown in a column of their own.
	ShowSecurity bool `json:"showSecurity"`
	// Calling are the turns called now (CALLED), the most recent call
	// first.
	Calling []BoardTurn `json:"calling"`
	// Recent are the last calls before those, newest first (at most
	// RecentCalls), whatever became of the turn since.
	Recent []BoardTurn `json:"recent"`
	// Waiting is how many wait to be called and how long a newcomer would
	// wait about.
	Waiting BoardWaiting `json:"waiting"`
	// Options are the token's screen options.
	Options Options `json:"options"`
	// GeneratedAt is when the board was read.
	GeneratedAt time.Time `json:"generatedAt"`
}

// BoardWaiting is the line as the waiting room sees it: how many turns
// wait (WAITING), and the wait of the last of them, which is about what a
// newcomer faces: the estimate in minutes and, once the queue has enough
// measured service times, the likely range (p50–p90). Both are null when
// nobody waits.
type BoardWaiting struct {
	Count       int              `json:"count"`
	WaitMinutes *int             `json:"waitMinutes"`
	WaitRange   *turns.WaitRange `json:"waitRange"`
	// Next are the display codes of the first NextUp waiting turns, the
	// next to be called first; a screen may show them ("next up").
	Next []string `json:"next"`
	// OverSLA is how many of them have waited longer than the queue's
	// sla.maxWaitMinutes (docs/queues.md); null when it has none. A
	// screen may flag it ("3 waiting over 15 min").
	OverSLA *int `json:"overSla"`
	// MaxWaitMinutes is that target (null without one).
	MaxWaitMinutes *int `json:"maxWaitMinutes"`
	// NextOverSLA are the codes of Next that have waited that long (empty
	// without a target): the board marks them beside the count.
	NextOverSLA []string `json:"nextOverSla"`
}

// NextUp is how many waiting codes the board lists as next up.
const NextUp = 5

// BoardQueue names the queue.
type BoardQueue struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Subtitle *string `json:"subtitle"`
}

// BoardRun is the run's state.
type BoardRun struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	IntakeOpen bool   `json:"intakeOpen"`
}

// Column is one column of the queue's arrivalBoard: Key names the turn's
// form answer shown under Label.
type Column struct {
	Key   string `json:"key"`
	Label string `json:"label"`
}

// BoardTurn is a called turn as the screen shows it. Only what a public
// screen may show: the display code, the station, when it was called, and
// the values of the arrivalBoard columns (the answers the account chose to
// display), never phone numbers or other answers.
type BoardTurn struct {
	TurnID      string            `json:"turnId"`
	DisplayCode string            `json:"displayCode"`
	Station     *BoardStation     `json:"station"`
	CalledAt    *time.Time        `json:"calledAt"`
	Columns     map[string]string `json:"columns"`
	// SecurityCode is the turn's pickup code when the queue's
	// arrivalBoard.showSecurity is on (null otherwise).
	SecurityCode *string `json:"securityCode"`
}

// BoardStation is where a called turn goes.
type BoardStation struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}
