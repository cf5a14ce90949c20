package events

import (
	"slices"
	"strings"

	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
)

// registry is every event of the application, one payload type each, in
// the order they are listed to clients (the OpenAPI enum, docs/webhooks.md).
// A payload type names its event (platform.Payload); this list is what
// makes the event exist for webhook subscriptions, the stream's filters,
// the screens and the documents checked against it. To add an event:
// docs/CONTRIBUTING-MODULES.md, "Adding an event". TestEveryPayloadIsRegistered
// fails on a payload type of a core that is missing here.
var registry = []platform.Payload{
	turns.TurnCreated{},
	turns.TurnCalled{},
	turns.TurnCompleted{},
	turns.TurnCancelled{},
	turns.TurnReopened{},
	queues.QueueOpened{},
	queues.QueueClosed{},
	appointments.AppointmentScheduled{},
	appointments.AppointmentCompleted{},
	ticket.HelpRequestedData{},
	ticket.HelpAnsweredData{},
	turns.TurnSLABreached{},
	notify.StatusChanged{},
}

// internal are the events the application raises for itself, not for
// clients: they go through the bus and the log like the others (so they
// reach every process, in order with the run's events), but no webhook
// endpoint can subscribe to them, no client stream sends them
// (stream.ReadScope knows no module of theirs), and they are no part of
// the API's contract. A screen's run group asks for them by name
// (stream.Filter.Internal).
var internal = []platform.Payload{
	display.TokenChanged{},
	counter.LinkRevoked{},
	turns.TurnStateChanged{},
}

// Internal returns the names of the internal events.
func Internal() []string {
	out := make([]string, len(internal))
	for i, p := range internal {
		out[i] = p.EventName()
	}
	return out
}

// InternalPayloads returns a zero value of every internal payload type.
func InternalPayloads() []platform.Payload { return slices.Clone(internal) }

// names are the registry's event names, in its order.
var names = func() []string {
	out := make([]string, len(registry))
	for i, p := range registry {
		out[i] = p.EventName()
	}
	return out
}()

// Payloads returns a zero value of every registered payload type.
func Payloads() []platform.Payload { return slices.Clone(registry) }

// Names returns the name of every event, the events a webhook endpoint can
// subscribe to.
func Names() []string { return slices.Clone(names) }

// IsInternal reports whether name is the name of an internal event.
func IsInternal(name string) bool {
	return slices.ContainsFunc(internal, func(p platform.Payload) bool { return p.EventName() == name })
}

// IsName reports whether name is the name of a registered event.
func IsName(name string) bool { return slices.Contains(names, name) }

// OfSubjects returns the names of the events whose subject, the name up to
// its first dot (turn of turn.called), is one of subjects, in the
// registry's order. The screens follow every turn and queue event this way,
// so a new turn.* or queue.* event refreshes them with no list to update.
func OfSubjects(subjects ...string) []string {
	var out []string
	for _, n := range names {
		subject, _, _ := strings.Cut(n, ".")
		if slices.Contains(subjects, subject) {
			out = append(out, n)
		}
	}
	return out
}
