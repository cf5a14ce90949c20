package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
)

// ErrSecretUnavailable marks an endpoint whose stored secret cannot be
// decrypted: the key that encrypted it is not the configured one.
var ErrSecretUnavailable = errors.New("the endpoint's signing secret cannot be decrypted with the configured webhooks.secret_key")

// Request is one attempt to send a delivery.
type Request struct {
	URL        string
	Event      string
	DeliveryID string
	Body       []byte
	// Signature is the X-Service-Signature value.
	Signature string
}

// Result is what came of a Request. Err is set when no response arrived
// (refused address, connection error, timeout); otherwise Status is the
// response's status and Excerpt the first bytes of its body.
type Result struct {
	Status  int
	Excerpt []byte
	Err     error
}

// Options tune a Service. Zero values take the defaults.
type Options struct {
	// URLs checks endpoint urls at creation.
	URLs URLPolicy
	// Schedule overrides the published retry schedule (tests).
	Schedule []time.Duration
	// MaxInFlight bounds the requests one process has open to one endpoint
	// (default DefaultMaxInFlight): an attempt beyond it is put off by a
	// second or two instead of holding a job worker while a slow receiver
	// holds the others.
	MaxInFlight int
	// Logger hears what no delivery record can tell (an attempt put off,
	// an unreadable secret); nil uses slog.Default().
	Logger *slog.Logger
	// Observe, when set, hears how each recorded attempt ended (an
	// Outcome* value) and its lag, the time from the delivery's creation
	// (the event) to the end of the attempt: the metrics module's
	// ports.DeliveryObserver.
	Observe func(outcome string, lag time.Duration)
}

// DefaultMaxInFlight is the default of Options.MaxInFlight.
const DefaultMaxInFlight = 4

// Service is the webhooks use cases and the delivery worker.
type Service struct {
	repo   Repository
	uow    platform.UnitOfWork
	jobs   platform.JobScheduler
	sender Sender
	clock  platform.Clock
	opts   Options
	gate   *gate
	rand   func() float64
}

// NewService builds the service.
func NewService(repo Repository, uow platform.UnitOfWork, jobs platform.JobScheduler, sender Sender, clock platform.Clock, opts Options) *Service {
	if opts.Schedule == nil {
		opts.Schedule = Schedule
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{repo: repo, uow: uow, jobs: jobs, sender: sender, clock: clock, opts: opts,
		gate: newGate(opts.MaxInFlight), rand: randFloat}
}

// CreateInput is the body of POST /webhook-endpoints.
type CreateInput struct {
	URL    *string   `json:"url"`
	Events *[]string `json:"events"`
}

// validate checks the shape of the input and returns the events without
// repeats, in the order given.
func (in CreateInput) validate(v *platform.Validator) []string {
	v.Required("url", in.URL != nil)
	if !v.Required("events", in.Events != nil) {
		return nil
	}
	asked := *in.Events
	v.MinItems("events", len(asked), 1)
	v.MaxItems("events", len(asked), len(events.Names()))
	var out []string
	seen := map[string]bool{}
	for i, e := range asked {
		if !events.IsName(e) {
			v.OneOf(platform.Index("events", i), e, events.Names()...)
			continue
		}
		if seen[e] {
			v.Fail(platform.Index("events", i), "unique", "repeats %s", e)
			continue
		}
		seen[e] = true
		out = append(out, e)
	}
	return out
}

// Create subscribes a url to events. The url is checked (syntax, and the
// addresses its host resolves to) before the transaction, since a DNS
// lookup must not hold one open. The answer carries the signing secret,
// the only time it is shown.
func (s *Service) Create(ctx context.Context, accountID string, in CreateInput) (CreatedEndpoint, error) {
	var v platform.Validator
	events := in.validate(&v)
	if in.URL != nil {
		if _, err := s.opts.URLs.Check(ctx, "url", *in.URL); err != nil {
			if fields := platform.FieldErrors(err); fields != nil {
				for _, f := range fields {
					v.Fail(f.Path, f.Rule, "%s", f.Message)
				}
			} else {
				return CreatedEndpoint{}, err
			}
		}
	}
	if err := v.Err(); err != nil {
		return CreatedEndpoint{}, err
	}
	ep := Endpoint{ID: platform.NewID(platform.PrefixWebhook), AccountID: accountID, URL: *in.URL,
		Events: events, Secret: NewSecret(), CreatedAt: s.clock.Now()}
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		n, err := s.repo.CountEndpoints(ctx, accountID)
		if err != nil {
			return err
		}
		if n >= MaxEndpoints {
			return platform.Conflict(CodeTooManyEndpoints, "an account has at most 20 webhook endpoints",
				map[string]any{"max": MaxEndpoints})
		}
		return s.repo.CreateEndpoint(ctx, ep)
	})
	if err != nil {
		return CreatedEndpoint{}, err
	}
	return CreatedEndpoint{Endpoint: ep, SigningSecret: ep.Secret.Reveal()}, nil
}

// Get returns an endpoint of the account (without showing its secret).
func (s *Service) Get(ctx context.Context, accountID, id string) (Endpoint, error) {
	ep, err := s.repo.GetEndpoint(ctx, id)
	if err != nil && !errors.Is(err, ErrSecretUnavailable) {
		return Endpoint{}, err
	}
	if ep.AccountID != accountID {
		return Endpoint{}, platform.ForeignResource("webhook endpoint")
	}
	return ep, nil
}

// List pages through the account's endpoints.
func (s *Service) List(ctx context.Context, accountID string, page platform.PageRequest) (platform.Page[Endpoint], error) {
	items, err := s.repo.ListEndpoints(ctx, accountID, page)
	if err != nil {
		return platform.Page[Endpoint]{}, err
	}
	return platform.PageOf(items, page.Limit, func(e Endpoint) string { return e.ID }), nil
}

// Delete removes an endpoint and its deliveries: attempts still due find
// nothing to send, and an attempt in flight is not recorded.
func (s *Service) Delete(ctx context.Context, accountID, id string) (Endpoint, error) {
	var out Endpoint
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		ep, err := s.Get(ctx, accountID, id)
		if err != nil {
			return err
		}
		out = ep
		return s.repo.DeleteEndpoint(ctx, id)
	})
	return out, err
}

// Deliveries returns the account's RecentDeliveries newest deliveries,
// newest first.
func (s *Service) Deliveries(ctx context.Context, accountID string) ([]Delivery, error) {
	out, err := s.repo.RecentDeliveries(ctx, accountID, RecentDeliveries)
	if out == nil {
		out = []Delivery{}
	}
	return out, err
}

// GetDelivery returns a delivery of the account.
func (s *Service) GetDelivery(ctx context.Context, accountID, id string) (Delivery, error) {
	d, err := s.repo.GetDelivery(ctx, id)
	if err != nil {
		return Delivery{}, err
	}
	if d.AccountID != accountID {
		return Delivery{}, platform.ForeignResource("webhook delivery")
	}
	return d, nil
}

// Redeliver sends a delivery once more, same id and same body, as soon as
// a job worker takes it; the attempt is recorded like any other. It does
// not touch the retry schedule: an automatic attempt still due stays due,
// unless this one succeeds first.
func (s *Service) Redeliver(ctx context.Context, accountID, id string) (Delivery, error) {
	var out Delivery
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		d, err := s.GetDelivery(ctx, accountID, id)
		if err != nil {
			return err
		}
		out = d
		return s.jobs.Schedule(ctx, platform.Job{Kind: JobDeliver, Args: AttemptArgs{DeliveryID: d.ID}})
	})
	return out, err
}
