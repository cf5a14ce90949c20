package platform

import (
	"context"
	"encoding/json"
)

// Actor is who made a change when it was not simply the account's API
// key: a counter link acting for a station (core/counter). It travels in
// the context of the use case, and every event raised in that context
// carries it as its data's "actor" member, so the events log, the stream
// and the webhooks say which link, at which station, did it.
type Actor struct {
	// Type is the kind of actor: "counter" for a counter link.
	Type string `json:"type"`
	// ID is the actor's id (the counter link's).
	ID string `json:"id"`
	// StationID is the station the actor acted for, if any.
	StationID *string `json:"stationId"`
}

type actorKey struct{}

// WithActor returns ctx carrying a.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor ctx carries, if any.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// StampActor returns data, a JSON object, with an "actor" member first.
// "actor" sorts before every name the payloads use, so the members stay
// in the byte order of their names. data that is not an object, or that
// already names an actor, is returned as it is.
func StampActor(data json.RawMessage, a Actor) json.RawMessage {
	if len(data) < 2 || data[0] != '{' {
		return data
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil {
		return data
	}
	if _, ok := probe["actor"]; ok {
		return data
	}
	ab, err := json.Marshal(a)
	if err != nil {
		return data
	}
	out := make([]byte, 0, len(data)+len(ab)+10)
	out = append(out, `{"actor":`...)
	out = append(out, ab...)
	if len(probe) > 0 {
		out = append(out, ',')
	}
	return append(out, data[1:]...)
}
