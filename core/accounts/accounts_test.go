package accounts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/testkit"
)

func newService(t *testing.T) (*accounts.Service, *platformtest.Clock) {
	clock := platformtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	return accounts.NewService(set.Accounts, store, clock), clock
}

func TestScopesWriteIncludesReadOfTheSameModuleOnly(t *testing.T) {
	set := accounts.NewScopeSet([]accounts.Scope{accounts.ScopeQueuesWrite, accounts.ScopeDispatchWrite})
	cases := map[accounts.Scope]bool{
		accounts.ScopeQueuesRead:   true,
		accounts.ScopeQueuesWrite:  true,
		accounts.ScopeTurnsRead:    false, // dispatch:write does not give turns:read
		accounts.ScopeTurnsWrite:   false,
		accounts.ScopeEntitiesRead: false,
	}
	for scope, want := range cases {
		if got := set.Allows(scope); got != want {
			t.Errorf("Allows(%s) = %v, want %v", scope, got, want)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t)
	acc, err := svc.CreateAccount(ctx, accounts.CreateAccountInput{Name: "Acme", Plan: accounts.PlanPremium})
	if err != nil {
		t.Fatal(err)
	}
	key, value, err := svc.CreateKey(ctx, acc.ID, accounts.CreateKeyInput{Scopes: []string{"queues:read"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(value, accounts.KeyPrefix) || len(value) < 30 || key.Hash == value || strings.Contains(key.Hash, value) {
		t.Fatalf("key value %q must be long, prefixed, and stored only as a hash", value)
	}

	p, err := svc.Authenticate(ctx, value)
	if err != nil || p.AccountID != acc.ID || !p.Scopes.Allows(accounts.ScopeQueuesRead) {
		t.Fatalf("authenticate: %+v %v", p, err)
	}
	if _, err := svc.Authenticate(ctx, "qms_unknown"); !platform.IsCode(err, accounts.CodeInvalidKey) {
		t.Fatalf("unknown key: %v", err)
	}

	// A downgrade reaches cached keys at once in this process, and so does
	// the upgrade back; the keys themselves are kept.
	if _, err := svc.SetPlan(ctx, acc.ID, accounts.PlanFree); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, value); !platform.IsCode(err, platform.CodePremiumRequired) {
		t.Fatalf("free plan: want PREMIUM_REQUIRED, got %v", err)
	}
	if _, _, err := svc.CreateKey(ctx, acc.ID, accounts.CreateKeyInput{Scopes: []string{"queues:read"}}); !platform.IsCode(err, platform.CodePremiumRequired) {
		t.Fatalf("key for a free account: want PREMIUM_REQUIRED, got %v", err)
	}
	if keys, _ := svc.ListKeys(ctx, acc.ID); len(keys) != 1 {
		t.Fatalf("a downgrade keeps the keys: %+v", keys)
	}
	if _, err := svc.SetPlan(ctx, acc.ID, accounts.PlanPremium); err != nil {
		t.Fatal(err)
	}

	// Revocation takes effect at once in this process.
	if _, err := svc.Authenticate(ctx, value); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RevokeKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, value); !platform.IsCode(err, accounts.CodeRevokedKey) {
		t.Fatalf("revoked key: want REVOKED_API_KEY, got %v", err)
	}
}

func TestCreateKeyRefusesUnknownScopes(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t)
	acc, _ := svc.CreateAccount(ctx, accounts.CreateAccountInput{Name: "Acme", Plan: accounts.PlanPremium})
	_, _, err := svc.CreateKey(ctx, acc.ID, accounts.CreateKeyInput{Scopes: []string{"queues:read", "queues:admin"}})
	e, ok := platform.AsError(err)
	if !ok || e.Code != platform.CodeValidation {
		t.Fatalf("want VALIDATION_ERROR, got %v", err)
	}
	fields := platform.FieldErrors(e)
	if len(fields) != 1 || fields[0].Path != "scopes[1]" {
		t.Fatalf("want scopes[1] named, got %+v", fields)
	}
	if _, err := svc.CreateAccount(ctx, accounts.CreateAccountInput{Name: "X", Plan: "gold"}); !platform.IsCode(err, platform.CodeValidation) {
		t.Fatalf("unknown plan: %v", err)
	}
}

// countingRepo counts the key look-ups that reach the store.
type countingRepo struct {
	accounts.Repository
	lookups int
}

func (r *countingRepo) GetKeyByHash(ctx context.Context, hash string) (accounts.APIKey, error) {
	r.lookups++
	return r.Repository.GetKeyByHash(ctx, hash)
}

// authFixture is a service on a memory store whose key look-ups are
// counted, with one premium account and one key of it (value).
type authFixture struct {
	clock *platformtest.Clock
	repo  *countingRepo
	svc   *accounts.Service
	acc   accounts.Account
	key   accounts.APIKey
	value string
}

func newAuthFixture(t *testing.T) authFixture {
	t.Helper()
	ctx := context.Background()
	f := authFixture{clock: platformtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	set, store := testkit.MemorySet(t, f.clock)
	f.repo = &countingRepo{Repository: set.Accounts}
	f.svc = accounts.NewService(f.repo, store, f.clock)
	var err error
	if f.acc, err = f.svc.CreateAccount(ctx, accounts.CreateAccountInput{Name: "Acme", Plan: accounts.PlanPremium}); err != nil {
		t.Fatal(err)
	}
	if f.key, f.value, err = f.svc.CreateKey(ctx, f.acc.ID, accounts.CreateKeyInput{Scopes: []string{"queues:read"}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestAuthCacheTTLFollowsNotifications: results are kept for the short
// fallback TTL until every change is known to reach ForgetAuth, for the
// long one while it is, and all are dropped when that stops being true.
func TestAuthCacheTTLFollowsNotifications(t *testing.T) {
	ctx := context.Background()
	a := newAuthFixture(t)
	clock, repo, svc, value := a.clock, a.repo, a.svc, a.value
	step := func(name string, advance time.Duration, wantLookups int) {
		t.Helper()
		clock.Advance(advance)
		if _, err := svc.Authenticate(ctx, value); err != nil {
			t.Fatal(err)
		}
		if repo.lookups != wantLookups {
			t.Fatalf("%s: %d look-ups, want %d", name, repo.lookups, wantLookups)
		}
	}
	step("first request", 0, 1)
	step("within the fallback TTL", accounts.AuthCacheTTL/2, 1)
	step("past the fallback TTL", accounts.AuthCacheTTL, 2)

	svc.SetNotified(true)
	step("notified: a result kept under the fallback TTL", 0, 2)
	step("notified: past the fallback TTL, the old result expires", accounts.AuthCacheTTL, 3)
	step("notified: long past the fallback TTL", accounts.NotifiedAuthCacheTTL/2, 3)
	step("notified: past the notified TTL", accounts.NotifiedAuthCacheTTL, 4)

	svc.SetNotified(false)
	step("no longer notified: the cache is dropped", 0, 5)
	step("and the fallback TTL applies again", accounts.AuthCacheTTL+time.Millisecond, 6)
}

// TestAuthenticateBytes: a key from bytes the caller reuses resolves as
// Authenticate does, from the cache on a hit, and a revocation reaches it
// at once.
func TestAuthenticateBytes(t *testing.T) {
	ctx := context.Background()
	a := newAuthFixture(t)
	repo, svc, acc, k, value := a.repo, a.svc, a.acc, a.key, a.value
	buf := []byte(value)
	p, err := svc.AuthenticateBytes(ctx, buf)
	if err != nil || p.KeyID != k.ID || p.AccountID != acc.ID || !p.Scopes.Allows(accounts.ScopeQueuesRead) {
		t.Fatalf("first: %+v %v", p, err)
	}
	// The caller reuses its buffer: what the cache kept is a copy.
	copy(buf, strings.Repeat("x", len(buf)))
	buf = []byte(value)
	if p, err := svc.AuthenticateBytes(ctx, buf); err != nil || p.KeyID != k.ID || repo.lookups != 1 {
		t.Fatalf("second: %+v %v, %d look-ups (want 1)", p, err, repo.lookups)
	}
	if _, err := svc.AuthenticateBytes(ctx, []byte("qms_unknown")); !platform.IsCode(err, accounts.CodeInvalidKey) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := svc.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AuthenticateBytes(ctx, buf); !platform.IsCode(err, accounts.CodeRevokedKey) {
		t.Fatalf("after revocation: %v", err)
	}
}

// TestAuthenticateBytesAt: the caller's time decides the cache's expiry
// on the system clock only; under another clock (a test's) the service's
// reading does, as in AuthenticateBytes.
func TestAuthenticateBytesAt(t *testing.T) {
	ctx := context.Background()
	a := newAuthFixture(t)
	far := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 2 {
		// The test's clock: a time far past the TTL changes nothing.
		if p, err := a.svc.AuthenticateBytesAt(ctx, []byte(a.value), far); err != nil || p.KeyID != a.key.ID {
			t.Fatalf("test clock: %+v %v", p, err)
		}
	}
	if a.repo.lookups != 1 {
		t.Fatalf("test clock: %d look-ups, want 1 (the second from the cache)", a.repo.lookups)
	}

	set, store := testkit.MemorySet(t, platform.SystemClock{})
	repo := &countingRepo{Repository: set.Accounts}
	svc := accounts.NewService(repo, store, platform.SystemClock{})
	acc, err := svc.CreateAccount(ctx, accounts.CreateAccountInput{Name: "Acme", Plan: accounts.PlanPremium})
	if err != nil {
		t.Fatal(err)
	}
	_, value, err := svc.CreateKey(ctx, acc.ID, accounts.CreateKeyInput{Scopes: []string{"queues:read"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, at := range []time.Time{now, now.Add(time.Second), now.Add(accounts.AuthCacheTTL + time.Minute)} {
		if p, err := svc.AuthenticateBytesAt(ctx, []byte(value), at); err != nil || p.AccountID != acc.ID {
			t.Fatalf("system clock, at %v: %+v %v", at, p, err)
		}
	}
	// The first cached the key, the second found it; the third, past the
	// TTL by the caller's time, missed and went through Authenticate,
	// whose own reading of the clock found the entry alive.
	if repo.lookups != 1 {
		t.Fatalf("system clock: %d look-ups, want 1", repo.lookups)
	}
}
