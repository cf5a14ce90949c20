package accounts

import (
	"context"
	"sync"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Codes raised by this module.
const (
	CodeInvalidKey = "INVALID_API_KEY"
	CodeRevokedKey = "REVOKED_API_KEY"
)

// KeyPrefix starts every API key value, so leaked keys are recognisable by
// secret scanners and people alike.
const KeyPrefix = "qms_"

// AuthCacheTTL bounds how long an authentication result is reused while
// changes may go unheard. Revoking a key or changing a plan clears the cache
// at once (ForgetAuth: directly in the process that made the change, through
// the store's notifications in the others); this short TTL is the fallback
// whenever those notifications are not known to arrive.
const AuthCacheTTL = 2 * time.Second

// NotifiedAuthCacheTTL is the TTL while every change is known to reach
// ForgetAuth (SetNotified): the cache then only bounds memory and the cost
// of a key that is looked up once. With 256 busy keys a 2 s TTL sent about
// 128 look-ups (256 statements) a second to the store for nothing.
const NotifiedAuthCacheTTL = time.Minute

// Service is the accounts use cases: the control panel's side (accounts,
// plans, keys) and the authentication of API calls.
type Service struct {
	repo  Repository
	uow   platform.UnitOfWork
	clock platform.Clock

	mu sync.Mutex
	// cache is keyed by the presented key value, not its hash: a hit then
	// costs no SHA-256 (4 % of a memory-mode GET's CPU, issue 16). The
	// values held are those of the last minute's requests, which the
	// process saw anyway; the hashes alone are stored.
	cache map[string]cachedAuth
	gen   uint64 // bumped by ForgetAuth: a lookup begun before is not cached
	// notified: every change reaches ForgetAuth (SetNotified), so results
	// are kept for NotifiedAuthCacheTTL instead of AuthCacheTTL.
	notified bool
}

type cachedAuth struct {
	principal Principal
	err       error
	expires   time.Time
}

// NewService builds the service.
func NewService(repo Repository, uow platform.UnitOfWork, clock platform.Clock) *Service {
	return &Service{repo: repo, uow: uow, clock: clock, cache: map[string]cachedAuth{}}
}

// CreateAccountInput is the admin API's account body.
type CreateAccountInput struct {
	Name string `json:"name" text:"name"`
	Plan Plan   `json:"plan"`
}

// CreateAccount creates an account on a plan.
func (s *Service) CreateAccount(ctx context.Context, in CreateAccountInput) (Account, error) {
	var v platform.Validator
	v.Len("name", in.Name, 1, 120)
	if v.Required("plan", in.Plan != "") {
		v.OneOf("plan", string(in.Plan), string(PlanPremium), string(PlanFree))
	}
	if err := v.Err(); err != nil {
		return Account{}, err
	}
	now := s.clock.Now()
	a := Account{ID: platform.NewID(platform.PrefixAccount), Name: in.Name, Plan: in.Plan, CreatedAt: now, UpdatedAt: now}
	if err := s.repo.CreateAccount(ctx, a); err != nil {
		return Account{}, err
	}
	return a, nil
}

// GetAccount returns an account.
func (s *Service) GetAccount(ctx context.Context, id string) (Account, error) {
	return s.repo.GetAccount(ctx, id)
}

// SetPlan changes an account's plan; a downgrade keeps the account's keys but
// turns every one of them to 402, from the next request on (the cache of this
// process is cleared at once, the others' on the store's notification).
func (s *Service) SetPlan(ctx context.Context, accountID string, plan Plan) (Account, error) {
	var v platform.Validator
	if v.Required("plan", plan != "") {
		v.OneOf("plan", string(plan), string(PlanPremium), string(PlanFree))
	}
	if err := v.Err(); err != nil {
		return Account{}, err
	}
	var out Account
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		a, err := s.repo.GetAccount(ctx, accountID)
		if err != nil {
			return err
		}
		a.Plan = plan
		a.UpdatedAt = s.clock.Now()
		out = a
		return s.repo.UpdateAccount(ctx, a)
	})
	if err == nil {
		s.ForgetAuth()
	}
	return out, err
}

// ForgetAuth drops every cached authentication result, so the next request of
// every key is checked against the store. Plan changes and revocations are
// rare, so clearing the whole cache is cheaper than indexing it by account.
//
// A lookup that began before the call is not cached when it ends, so a result
// read just before a change cannot outlive the change's notification.
func (s *Service) ForgetAuth() {
	s.mu.Lock()
	clear(s.cache)
	s.gen++
	s.mu.Unlock()
}

// SetNotified says whether every change to accounts and keys now reaches
// ForgetAuth: true in memory mode (every change is this process's) and in
// postgres mode while the notification listener is connected. Turning it
// off drops the cache, since results kept for the longer TTL must not
// outlive the notifications that guarded them.
func (s *Service) SetNotified(on bool) {
	s.mu.Lock()
	s.notified = on
	if !on {
		clear(s.cache)
		s.gen++
	}
	s.mu.Unlock()
}

// CreateKeyInput is the admin API's key body.
type CreateKeyInput struct {
	Name   string   `json:"name" text:"name"`
	Scopes []string `json:"scopes"`
}

// CreateKey makes a key for the account and returns it with its value: the
// only time the value exists outside the caller's hands.
func (s *Service) CreateKey(ctx context.Context, accountID string, in CreateKeyInput) (APIKey, string, error) {
	var v platform.Validator
	v.Len("name", in.Name, 0, 120)
	if v.Required("scopes", in.Scopes != nil) {
		v.MinItems("scopes", len(in.Scopes), 1)
	}
	scopes := make([]Scope, 0, len(in.Scopes))
	seen := map[Scope]bool{}
	for i, raw := range in.Scopes {
		sc := Scope(raw)
		if !sc.Valid() {
			v.Fail(platform.Index("scopes", i), "scope", "unknown scope %q", raw)
			continue
		}
		if !seen[sc] {
			seen[sc] = true
			scopes = append(scopes, sc)
		}
	}
	if err := v.Err(); err != nil {
		return APIKey{}, "", err
	}
	a, err := s.repo.GetAccount(ctx, accountID)
	if err != nil {
		return APIKey{}, "", err
	}
	if a.Plan != PlanPremium { // spec §5: key creation requires the Premium plan
		return APIKey{}, "", platform.NewError(platform.KindPaymentRequired, platform.CodePremiumRequired,
			"API keys can be created only for accounts on the premium plan", map[string]any{"plan": string(a.Plan)})
	}
	value := newKeyValue()
	k := APIKey{
		ID:        platform.NewID(platform.PrefixAPIKey),
		AccountID: accountID,
		Name:      in.Name,
		Prefix:    value[:len(KeyPrefix)+6],
		Hash:      HashKey(value),
		Scopes:    scopes,
		CreatedAt: s.clock.Now(),
	}
	if err := s.repo.CreateKey(ctx, k); err != nil {
		return APIKey{}, "", err
	}
	return k, value, nil
}

// ListKeys lists an account's keys, without their values.
func (s *Service) ListKeys(ctx context.Context, accountID string) ([]APIKey, error) {
	if _, err := s.repo.GetAccount(ctx, accountID); err != nil {
		return nil, err
	}
	return s.repo.ListKeys(ctx, accountID)
}

// RevokeKey revokes a key; revoking twice is a no-op that returns the key.
func (s *Service) RevokeKey(ctx context.Context, keyID string) (APIKey, error) {
	var out APIKey
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		k, err := s.repo.GetKey(ctx, keyID)
		if err != nil {
			return err
		}
		if k.RevokedAt == nil {
			now := s.clock.Now()
			k.RevokedAt = &now
			if err := s.repo.UpdateKey(ctx, k); err != nil {
				return err
			}
		}
		out = k
		return nil
	})
	if err == nil {
		s.ForgetAuth()
	}
	return out, err
}

// Authenticate resolves a presented key value to a principal: 401 for an
// unknown or revoked key, 402 when the account is not premium. Results are
// cached for AuthCacheTTL, or NotifiedAuthCacheTTL (SetNotified).
func (s *Service) Authenticate(ctx context.Context, value string) (Principal, error) {
	now := s.clock.Now()
	s.mu.Lock()
	c, ok := s.cache[value]
	gen := s.gen
	s.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.principal, c.err
	}
	p, err := s.authenticate(ctx, HashKey(value))
	if err != nil {
		if _, domain := platform.AsError(err); !domain {
			return Principal{}, err // infrastructure failure: never cached
		}
	}
	s.mu.Lock()
	if s.gen == gen { // nothing changed while this lookup ran
		if len(s.cache) > 10000 { // bound memory against floods of random keys
			clear(s.cache)
		}
		ttl := AuthCacheTTL
		if s.notified {
			ttl = NotifiedAuthCacheTTL
		}
		s.cache[value] = cachedAuth{principal: p, err: err, expires: now.Add(ttl)}
	}
	s.mu.Unlock()
	return p, err
}

// AuthenticateBytes is Authenticate for a key value the caller does not
// own (a request header's bytes, reused after the request): a cached
// result is found without copying them, which was an allocation of every
// API request (issue 16); a miss copies them once.
func (s *Service) AuthenticateBytes(ctx context.Context, value []byte) (Principal, error) {
	return s.authenticateBytes(ctx, value, s.clock.Now())
}

// AuthenticateBytesAt is AuthenticateBytes at the time at, which the
// caller read (an HTTP request's start), for a service on the system
// clock: a reading of the clock less per request (issue 30, P1). Under
// any other clock (a test's), the service's own reading decides, as
// before.
func (s *Service) AuthenticateBytesAt(ctx context.Context, value []byte, at time.Time) (Principal, error) {
	if _, system := s.clock.(platform.SystemClock); !system {
		return s.AuthenticateBytes(ctx, value)
	}
	// As platform.SystemClock spells a time.
	return s.authenticateBytes(ctx, value, at.UTC().Truncate(time.Microsecond))
}

func (s *Service) authenticateBytes(ctx context.Context, value []byte, now time.Time) (Principal, error) {
	s.mu.Lock()
	c, ok := s.cache[string(value)] // no copy: the conversion only indexes
	s.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.principal, c.err
	}
	return s.Authenticate(ctx, string(value))
}

func (s *Service) authenticate(ctx context.Context, hash string) (Principal, error) {
	k, err := s.repo.GetKeyByHash(ctx, hash)
	if platform.IsCode(err, platform.CodeNotFound) {
		return Principal{}, platform.NewError(platform.KindUnauthorized, CodeInvalidKey, "the API key is not valid", map[string]any{})
	}
	if err != nil {
		return Principal{}, err
	}
	if k.Revoked() {
		return Principal{}, platform.NewError(platform.KindUnauthorized, CodeRevokedKey, "the API key was revoked", map[string]any{})
	}
	a, err := s.repo.GetAccount(ctx, k.AccountID)
	if err != nil {
		return Principal{}, err
	}
	if a.Plan != PlanPremium {
		return Principal{}, platform.NewError(platform.KindPaymentRequired, platform.CodePremiumRequired,
			"the API needs the account to be on the premium plan", map[string]any{"plan": string(a.Plan)})
	}
	return Principal{AccountID: a.ID, KeyID: k.ID, Scopes: NewScopeSet(k.Scopes)}, nil
}

// HashKey is how a key value is stored (platform.HashSecret).
func HashKey(value string) string { return platform.HashSecret(value) }

func newKeyValue() string { return platform.NewSecret(KeyPrefix) }
