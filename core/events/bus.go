// Package events records domain events and fans them out, inside the
// transaction of the change that raised them, to the modules that react to
// them (webhook deliveries, the live stream).
package events

import (
	"context"
	"fmt"

	"github.com/qms-dev/qms/core/platform"
)

// Bus is the platform.EventSink of the application.
type Bus struct {
	store       Store
	subscribers []Subscriber
}

// NewBus builds a bus over the event log.
func NewBus(store Store) *Bus { return &Bus{store: store} }

// Subscribe adds a subscriber. Call it while wiring, before serving.
func (b *Bus) Subscribe(s Subscriber) { b.subscribers = append(b.subscribers, s) }

// Emit appends the event and hands it to every subscriber.
func (b *Bus) Emit(ctx context.Context, e platform.Event) error {
	if e.ID == "" {
		e.ID = platform.NewID(platform.PrefixEvent)
	}
	e.Data = e.DataOrEmpty()
	// A change made by an actor other than the key (a counter link) says
	// so in every event it raises.
	if a, ok := platform.ActorFrom(ctx); ok {
		e.Data = platform.StampActor(e.Data, a)
	}
	if err := b.store.Append(ctx, e); err != nil {
		return fmt.Errorf("events: append %s: %w", e.Name, err)
	}
	for _, s := range b.subscribers {
		if err := s.OnEvent(ctx, e); err != nil {
			return fmt.Errorf("events: %s subscriber: %w", e.Name, err)
		}
	}
	return nil
}
