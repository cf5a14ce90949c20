// Package counter is the staff console of a queue: counter links that open
// the console at /counter/{token} without an API key, and what the console
// does with them — read the queue's line and act on its turns (next, call,
// start, complete, hold, forward, add a walk-in, ...).
//
// A counter link is a capability, like a display token: it works on one
// queue and nothing else of the account, needs no scope, and is made and
// revoked by the account (dispatch:write). Only its SHA-256 hash is
// stored; the value is shown once, when it is made. It belongs to the
// queue, not to one run, so a link bookmarked at a counter outlives the
// day: the console works on the queue's current run.
//
// Every action is a press: it carries a key the console makes once per
// press of a button, and a press is done at most once (a double click, a
// retry after a lost answer, replays the first answer). Presses are kept:
// they are the turn's history at the counters, each naming its link and
// station.
package counter

import (
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// PrefixLink begins every counter link id, PrefixPress every press id;
// TokenValuePrefix begins every link value.
const (
	PrefixLink       = "ctr"
	PrefixPress      = "prs"
	TokenValuePrefix = "qmsc_"
)

// Codes raised by this module.
const (
	// CodeInvalidCounterLink: the counter link is unknown. 404.
	CodeInvalidCounterLink = "INVALID_COUNTER_LINK"
	// CodeCounterLinkRevoked: the counter link was revoked. 410.
	CodeCounterLinkRevoked = "COUNTER_LINK_REVOKED"
	// CodeTooManyCounterLinks: the queue has MaxLinksPerQueue live links. 409.
	CodeTooManyCounterLinks = "TOO_MANY_COUNTER_LINKS"
	// CodeStationNotAllowed: the link may not act for that station. 403.
	CodeStationNotAllowed = "STATION_NOT_ALLOWED"
	// CodeStationRequired: the queue has stations and the action names
	// none. 422.
	CodeStationRequired = "STATION_REQUIRED"
	// CodePressKeyReused: the press key was used for another action. 409.
	CodePressKeyReused = "PRESS_KEY_REUSED"
	// CodeNoCurrentRun: the queue has no run to work on. 409.
	CodeNoCurrentRun = "NO_CURRENT_RUN"
	// CodeTransferDisabled: forward asked of a queue whose transferEnabled
	// is off. 409.
	CodeTransferDisabled = "TRANSFER_DISABLED"
)

// MaxLinksPerQueue bounds the live (unrevoked) links of one queue.
const MaxLinksPerQueue = 50

// Link is a stored counter link.
type Link struct {
	ID        string     `json:"id"`
	AccountID string     `json:"-"`
	QueueID   string     `json:"queueId"`
	Label     *string    `json:"label"`
	Hash      string     `json:"-"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt"`
	Options
}

// Options are what the link's console may do and show.
type Options struct {
	// Language is the console's language (one of Languages); null
	// follows the browser's.
	Language *string `json:"language"`
	// StationIDs are the stations the link may act for; empty means every
	// station of the queue.
	StationIDs []string `json:"stationIds"`
	// ShowDetails is whether the console shows the customers' phone
	// numbers and form answers. Off by default: a link is a URL, and a
	// URL travels.
	ShowDetails bool `json:"showDetails"`
}

// Revoked reports whether the link was revoked.
func (l Link) Revoked() bool { return l.RevokedAt != nil }

// LinkRevoked is the internal event (events.Internal: never sent to a
// client, never a webhook) raised in the transaction that revokes a link.
// It reaches the consoles the link opened through the event log, in every
// process, as the queue's turn events do: an open console ends at once,
// and no console re-reads its link while it waits (its heartbeat used to,
// every 2 s).
type LinkRevoked struct {
	LinkID string `json:"linkId"`
}

// EventName is the internal event's name.
func (LinkRevoked) EventName() string { return "counter_link.revoked" }

// MayUse reports whether the link may act for station id.
func (l Link) MayUse(id string) bool {
	if len(l.StationIDs) == 0 {
		return true
	}
	for _, s := range l.StationIDs {
		if s == id {
			return true
		}
	}
	return false
}

// Created is a new link with its value, shown this once.
type Created struct {
	Link
	// Value is the link's token; only its hash is kept.
	Value string `json:"token"`
}

// CreateInput is the body of a link creation.
type CreateInput struct {
	Label       *string  `json:"label" text:"name"`
	Language    *string  `json:"language"`
	StationIDs  []string `json:"stationIds"`
	ShowDetails *bool    `json:"showDetails"`
}

// Languages are the languages the console speaks (the waiting-room
// pages' catalogues, adapters/http/i18nweb).
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

func newTokenValue() string { return platform.NewSecret(TokenValuePrefix) }

// HashToken is how a link value is stored and looked up.
func HashToken(value string) string { return platform.HashSecret(value) }

// LooksLikeToken reports whether s has a link value's shape.
func LooksLikeToken(s string) bool { return platform.LooksLikeSecret(s, TokenValuePrefix) }

// Press is one press of a console button, kept: a repeat of its key
// replays it, and the presses of a turn are its history at the counters.
type Press struct {
	ID        string  `json:"id"`
	AccountID string  `json:"-"`
	LinkID    string  `json:"linkId"`
	QueueID   string  `json:"queueId"`
	Key       string  `json:"-"`
	Action    Action  `json:"action"`
	StationID *string `json:"stationId"`
	// TurnID is the turn the press acted on (for next, the one it
	// called; for a walk-in, the one it made).
	TurnID *string `json:"turnId"`
	// RequestHash tells a repeat from a reuse of the key for another
	// request.
	RequestHash string    `json:"-"`
	At          time.Time `json:"at"`
}

// Action names what a press does.
type Action string

// Actions.
const (
	ActNext     Action = "next"
	ActCall     Action = "call"
	ActArrive   Action = "arrive"
	ActStart    Action = "start"
	ActComplete Action = "complete"
	ActNoShow   Action = "no-show"
	ActHold     Action = "hold"
	ActRelease  Action = "release"
	ActCancel   Action = "cancel"
	ActReopen   Action = "reopen"
	ActPriority Action = "priority"
	ActForward  Action = "forward"
	ActWalkIn   Action = "walk-in"
)

// Actions lists every action, in the order the docs show them.
var Actions = []Action{ActNext, ActCall, ActArrive, ActStart, ActComplete, ActNoShow, ActHold, ActRelease,
	ActCancel, ActReopen, ActPriority, ActForward, ActWalkIn}

// Valid reports whether a is an action.
func (a Action) Valid() bool {
	for _, x := range Actions {
		if x == a {
			return true
		}
	}
	return false
}

// needsTurn reports whether the action names a turn.
func (a Action) needsTurn() bool { return a != ActNext && a != ActWalkIn }
