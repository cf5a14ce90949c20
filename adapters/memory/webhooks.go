package memory

import (
	"context"
	"slices"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/webhooks"
)

// Webhooks is the memory webhooks.Repository. Secrets stay in clear: they
// live only as long as the process.
type Webhooks struct {
	s          *Store
	endpoints  *table[webhooks.Endpoint]
	deliveries *table[webhooks.Delivery]
}

// NewWebhooks builds the repository on s.
func NewWebhooks(s *Store) *Webhooks {
	return &Webhooks{s: s, endpoints: newTable[webhooks.Endpoint](s), deliveries: newTable[webhooks.Delivery](s)}
}

// copyEndpoint keeps callers from sharing the stored slice.
func copyEndpoint(e webhooks.Endpoint) webhooks.Endpoint {
	e.Events = slices.Clone(e.Events)
	return e
}

// copyDelivery keeps callers from sharing the stored body or pointers.
func copyDelivery(d webhooks.Delivery) webhooks.Delivery {
	d.Body = slices.Clone(d.Body)
	d.LastResponseStatus = clonePtr(d.LastResponseStatus)
	d.LastError = clonePtr(d.LastError)
	d.LastAttemptAt = clonePtr(d.LastAttemptAt)
	d.NextAttemptAt = clonePtr(d.NextAttemptAt)
	return d
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// CreateEndpoint stores a new endpoint.
func (r *Webhooks) CreateEndpoint(ctx context.Context, e webhooks.Endpoint) error {
	e = copyEndpoint(e)
	r.s.write(ctx, func() func() { return r.endpoints.put(e.ID, e) })
	return nil
}

// GetEndpoint returns an endpoint with its secret.
func (r *Webhooks) GetEndpoint(ctx context.Context, id string) (e webhooks.Endpoint, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if e, ok = r.endpoints.rows[id]; !ok {
			err = platform.NotFound("webhook endpoint", id)
		}
		e = copyEndpoint(e)
	})
	return e, err
}

// DeleteEndpoint removes an endpoint and its deliveries.
func (r *Webhooks) DeleteEndpoint(ctx context.Context, id string) error {
	r.s.write(ctx, func() func() {
		undo := []func(){r.endpoints.del(id)}
		for did, d := range r.deliveries.rows {
			if d.EndpointID == id {
				undo = append(undo, r.deliveries.del(did))
			}
		}
		return func() {
			for i := len(undo) - 1; i >= 0; i-- {
				if undo[i] != nil {
					undo[i]()
				}
			}
		}
	})
	return nil
}

// ListEndpoints pages the account's endpoints by id, without their secrets.
func (r *Webhooks) ListEndpoints(ctx context.Context, accountID string, page platform.PageRequest) (out []webhooks.Endpoint, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.endpoints.rows, page.After, page.Limit+1, func(e webhooks.Endpoint) bool { return e.AccountID == accountID })
		for i := range out {
			out[i] = copyEndpoint(out[i])
			out[i].Secret = ""
		}
	})
	return out, nil
}

// CountEndpoints counts the account's endpoints.
func (r *Webhooks) CountEndpoints(ctx context.Context, accountID string) (n int, err error) {
	r.s.read(ctx, func() {
		for _, e := range r.endpoints.rows {
			if e.AccountID == accountID {
				n++
			}
		}
	})
	return n, nil
}

// SubscribedEndpoints returns the account's endpoints subscribed to event,
// by id, without their secrets.
func (r *Webhooks) SubscribedEndpoints(ctx context.Context, accountID, event string) (out []webhooks.Endpoint, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.endpoints.rows, "", 0, func(e webhooks.Endpoint) bool {
			return e.AccountID == accountID && e.Subscribes(event)
		})
		for i := range out {
			out[i] = copyEndpoint(out[i])
			out[i].Secret = ""
		}
	})
	return out, nil
}

// CreateDelivery stores a new delivery.
func (r *Webhooks) CreateDelivery(ctx context.Context, d webhooks.Delivery) error {
	d = copyDelivery(d)
	r.s.write(ctx, func() func() { return r.deliveries.put(d.ID, d) })
	return nil
}

// CreateDeliveries stores an event's deliveries.
func (r *Webhooks) CreateDeliveries(ctx context.Context, ds []webhooks.Delivery) error {
	for _, d := range ds {
		d = copyDelivery(d)
		r.s.write(ctx, func() func() { return r.deliveries.put(d.ID, d) })
	}
	return nil
}

// GetDeliveryToSend returns a delivery and its endpoint, read together.
func (r *Webhooks) GetDeliveryToSend(ctx context.Context, id string) (d webhooks.Delivery, e webhooks.Endpoint, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if d, ok = r.deliveries.rows[id]; !ok {
			err = platform.NotFound("webhook delivery", id)
			return
		}
		if e, ok = r.endpoints.rows[d.EndpointID]; !ok {
			d, err = webhooks.Delivery{}, platform.NotFound("webhook delivery", id)
			return
		}
		d, e = copyDelivery(d), copyEndpoint(e)
	})
	return d, e, err
}

// RecordSuccess stores a successful attempt.
func (r *Webhooks) RecordSuccess(ctx context.Context, id string, at time.Time, status int) (err error) {
	r.s.write(ctx, func() func() {
		d, ok := r.deliveries.rows[id]
		if !ok {
			err = platform.NotFound("webhook delivery", id)
			return nil
		}
		d = copyDelivery(d)
		d.Status, d.Attempts, d.LastResponseStatus, d.LastError = webhooks.StatusSucceeded, d.Attempts+1, &status, nil
		d.LastAttemptAt, d.NextAttemptAt, d.RetryToken = &at, nil, ""
		return r.deliveries.put(id, d)
	})
	return err
}

// GetDelivery returns a delivery.
func (r *Webhooks) GetDelivery(ctx context.Context, id string) (d webhooks.Delivery, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if d, ok = r.deliveries.rows[id]; !ok {
			err = platform.NotFound("webhook delivery", id)
		}
		d = copyDelivery(d)
	})
	return d, err
}

// GetDeliveryForUpdate is GetDelivery: memory units of work are serialised.
func (r *Webhooks) GetDeliveryForUpdate(ctx context.Context, id string) (webhooks.Delivery, error) {
	return r.GetDelivery(ctx, id)
}

// UpdateDelivery stores the outcome of an attempt. A delivery deleted
// meanwhile (with its endpoint) stays deleted.
func (r *Webhooks) UpdateDelivery(ctx context.Context, d webhooks.Delivery) error {
	d = copyDelivery(d)
	r.s.write(ctx, func() func() {
		old, ok := r.deliveries.rows[d.ID]
		if !ok {
			return nil
		}
		// The event, endpoint and body of a delivery never change.
		d.AccountID, d.EndpointID, d.EventID, d.Event, d.Body, d.CreatedAt = old.AccountID, old.EndpointID, old.EventID, old.Event, old.Body, old.CreatedAt
		return r.deliveries.put(d.ID, d)
	})
	return nil
}

// RecentDeliveries returns the account's newest deliveries first.
func (r *Webhooks) RecentDeliveries(ctx context.Context, accountID string, limit int) (out []webhooks.Delivery, err error) {
	r.s.read(ctx, func() {
		all := sorted(r.deliveries.rows, "", 0, func(d webhooks.Delivery) bool { return d.AccountID == accountID })
		slices.Reverse(all)
		if len(all) > limit {
			all = all[:limit]
		}
		out = make([]webhooks.Delivery, len(all))
		for i, d := range all {
			out[i] = copyDelivery(d)
		}
	})
	return out, nil
}
