// Package stream is the live event stream: it delivers an account's domain
// events, as they commit, to subscribers (GET /api/v1/events/stream and the
// display board), in one order, without duplicates, and lets a subscriber
// that reconnects with the id of the last event it received pick up every
// event it missed within the retained window.
//
// The event log (events.Bus appends every domain event to it inside the
// change's transaction) is the source of truth; notifications only say
// "this account has new events" and carry nothing a subscriber relies on.
// A [Hub] keeps one feed per account that has subscribers in this process:
// woken by a notification (Postgres LISTEN/NOTIFY, so events committed by
// any process on the database arrive; in memory mode an after-commit hook),
// the feed reads the log after its position once and hands each new event
// to every subscriber whose filter and scopes let it through. A subscriber
// whose buffer is full is cut off rather than allowed to grow the server's
// memory; it reconnects with its last event id and loses nothing.
//
// Ordering across processes is the log's business: [Log.Read] returns only
// events whose place in the order is final (in Postgres, events of
// transactions older than every transaction still running), so an event
// that commits late can never land behind a position a subscriber has
// already passed.
package stream

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

// Position is where an event sits in its account's stream. Events are
// delivered in position order: Tx orders the transactions that wrote them
// (Postgres: the writing transaction's 64-bit id; memory: a commit
// sequence), ID orders the events of one transaction.
type Position struct {
	Tx uint64
	ID string
}

// Less reports whether p comes before q.
func (p Position) Less(q Position) bool {
	if p.Tx != q.Tx {
		return p.Tx < q.Tx
	}
	return p.ID < q.ID
}

// Entry is an event at its position.
type Entry struct {
	Position Position
	Event    platform.Event
}

// ReadScope is the scope a subscriber needs to receive an event: the read
// scope of the event's module (turn.* turns:read, queue.* queues:read,
// appointment.* appointments:read). ok is false for an event of no known
// module, which no subscriber receives.
func ReadScope(eventName string) (scope accounts.Scope, ok bool) {
	module, _, _ := strings.Cut(eventName, ".")
	switch module {
	case "turn":
		return accounts.ScopeTurnsRead, true
	case "queue":
		return accounts.ScopeQueuesRead, true
	case "appointment":
		return accounts.ScopeAppointmentsRead, true
	}
	return "", false
}

// StreamScopes are the scopes of which a key needs at least one to open the
// stream: a key with none of them could receive nothing.
var StreamScopes = []accounts.Scope{accounts.ScopeTurnsRead, accounts.ScopeQueuesRead, accounts.ScopeAppointmentsRead}

// Filter selects the events a subscriber receives.
type Filter struct {
	// Scopes are the subscriber's: an event is sent only when they allow
	// its ReadScope.
	Scopes accounts.ScopeSet
	// QueueID and RunID, when set, keep only the events of that queue or
	// run.
	QueueID string
	RunID   string
	// Names, when not empty, keeps only the events with these names.
	Names []string
	// Internal are names of internal events (events.IsInternal: a token
	// revoked, its options changed) that the subscriber also receives,
	// whatever its scopes and Names, within its queue or run. Only a
	// consumer inside the process asks for them (the screens' run groups);
	// no client is ever sent one.
	Internal []string
}

// Match reports whether the filter lets e through.
func (f Filter) Match(e platform.Event) bool {
	if f.QueueID != "" && e.QueueID != f.QueueID {
		return false
	}
	if f.RunID != "" && e.RunID != f.RunID {
		return false
	}
	if slices.Contains(f.Internal, e.Name) {
		return true
	}
	scope, ok := ReadScope(e.Name)
	if !ok || !f.Scopes.Allows(scope) {
		return false
	}
	if len(f.Names) > 0 {
		for _, n := range f.Names {
			if n == e.Name {
				return true
			}
		}
		return false
	}
	return true
}

// Message is what a subscriber receives for an event: the webhook delivery
// body of spec section 6, with the event's id where a delivery carries its
// delivery id (the SSE id is that same event id).
type Message struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	CreatedAt string          `json:"createdAt"`
}

// TimestampLayout is the layout of createdAt: ISO 8601 in UTC with
// milliseconds, as in webhook bodies.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// MessageOf builds the message of an event.
func MessageOf(e platform.Event) Message {
	return Message{ID: e.ID, Event: e.Name, Data: e.DataOrEmpty(), CreatedAt: e.OccurredAt.UTC().Format(TimestampLayout)}
}
