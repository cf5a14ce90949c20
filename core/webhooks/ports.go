package webhooks

import (
	"context"
	"net/netip"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Every port of the module (docs/architecture.md, "Ports").

// Repository stores endpoints and deliveries. Deleting an endpoint deletes
// its deliveries, which is how a deletion stops the attempts still due:
// their jobs find nothing to send.
type Repository interface {
	CreateEndpoint(ctx context.Context, e Endpoint) error
	// GetEndpoint returns an endpoint with its secret. A secret the
	// repository cannot read back (encrypted with another key) is an error
	// wrapping ErrSecretUnavailable.
	GetEndpoint(ctx context.Context, id string) (Endpoint, error)
	DeleteEndpoint(ctx context.Context, id string) error
	// ListEndpoints returns up to page.Limit+1 endpoints of the account
	// after page.After, ordered by id, without their secrets.
	ListEndpoints(ctx context.Context, accountID string, page platform.PageRequest) ([]Endpoint, error)
	// CountEndpoints counts the account's endpoints, and holds the count
	// until the unit of work ends (no other endpoint of the account is
	// made meanwhile), so MaxEndpoints holds under concurrency.
	CountEndpoints(ctx context.Context, accountID string) (int, error)
	// SubscribedEndpoints returns the account's endpoints subscribed to
	// event, without their secrets (fanning out needs none).
	SubscribedEndpoints(ctx context.Context, accountID, event string) ([]Endpoint, error)

	CreateDelivery(ctx context.Context, d Delivery) error
	// CreateDeliveries stores an event's deliveries, one per endpoint, in
	// one statement where the storage can: all of them or none, except a
	// delivery whose endpoint was deleted since it was read, which is not
	// stored (the deletion would have taken it with the endpoint).
	CreateDeliveries(ctx context.Context, ds []Delivery) error
	GetDelivery(ctx context.Context, id string) (Delivery, error)
	// GetDeliveryToSend returns a delivery and its endpoint with the
	// endpoint's secret, read together (one round trip for an attempt).
	// A secret the repository cannot read back comes as the endpoint
	// without it and an error wrapping ErrSecretUnavailable.
	GetDeliveryToSend(ctx context.Context, id string) (Delivery, Endpoint, error)
	// RecordSuccess stores a successful attempt ended at `at` with the
	// receiver's status, in one statement: status SUCCEEDED, one attempt
	// more, no error, and the retry schedule ended (no retry token, no
	// next attempt), whatever attempt recorded before. A delivery gone
	// (its endpoint deleted) is CodeNotFound.
	RecordSuccess(ctx context.Context, id string, at time.Time, status int) error
	// GetDeliveryForUpdate locks the delivery until the unit of work ends.
	GetDeliveryForUpdate(ctx context.Context, id string) (Delivery, error)
	// UpdateDelivery stores the outcome of an attempt: status, attempts,
	// last response status, last error, attempt times and retry token.
	UpdateDelivery(ctx context.Context, d Delivery) error
	// RecentDeliveries returns the account's newest deliveries first, at
	// most limit.
	RecentDeliveries(ctx context.Context, accountID string, limit int) ([]Delivery, error)
	// PruneDeliveries deletes the finished deliveries (SUCCEEDED or FAILED)
	// created before before; pending ones are kept, at most limit rows, in one
	// short transaction of its own (not the caller's), and reports how many:
	// the module's retention task (ports.RetentionTask) calls it again while
	// it deletes a full batch.
	PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error)
}

// Sender sends webhook requests: a POST of Body to URL with the
// X-Service-* headers, no redirects followed, the dialled address checked
// unless private networks are allowed, bounded by ctx.
type Sender interface {
	Send(ctx context.Context, r Request) Result
}

// Resolver looks host names up. *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}
