package httpx

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

// HeaderAPIKey carries the caller's API key (spec section 5).
const HeaderAPIKey = "X-API-Key"

// Authenticator resolves a presented API key to its principal. The accounts
// service implements it; it refuses with platform errors of kind
// KindUnauthorized (unknown or revoked key) or KindPaymentRequired (the
// account left Premium), which the error handler maps to 401 and 402. Any
// other error is an infrastructure failure (500).
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (accounts.Principal, error)
}

// BytesAuthenticator is an Authenticator that also resolves a key from
// the header's bytes, which fasthttp reuses after the request: it must
// copy them if it keeps them (the accounts service does, on a cache miss
// only). authenticate prefers it: the copy of every request's key was an
// allocation (issue 16).
type BytesAuthenticator interface {
	AuthenticateBytes(ctx context.Context, key []byte) (accounts.Principal, error)
}

// BytesAuthenticatorAt is a BytesAuthenticator that takes the time of
// the request (its start, RequestStart) rather than reading the clock
// again, when its own clock is the system's (the accounts service's
// AuthenticateBytesAt). authenticate prefers it.
type BytesAuthenticatorAt interface {
	AuthenticateBytesAt(ctx context.Context, key []byte, at time.Time) (accounts.Principal, error)
}

// Auth is the middleware that authenticates the X-API-Key header and stores
// the principal for PrincipalOf, Require, RateLimit and the access log. A
// missing key is 401 UNAUTHORIZED "missing X-API-Key".
func Auth(a Authenticator) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := authenticate(c, a); err != nil {
			return err
		}
		return c.Next()
	}
}

// authenticate resolves the request's key and stores the principal.
func authenticate(c *fiber.Ctx, a Authenticator) error {
	raw := c.Request().Header.Peek(HeaderAPIKey)
	if len(raw) == 0 {
		return platform.NewError(platform.KindUnauthorized, platform.CodeUnauthorized, "missing "+HeaderAPIKey, nil)
	}
	// The header's bytes are fasthttp's reusable buffer; an authenticator
	// that caches by key must get a string of its own: one copy, made
	// here, unless it copies them itself when it must
	// (BytesAuthenticator).
	var p accounts.Principal
	var err error
	if ba, ok := a.(BytesAuthenticatorAt); ok {
		p, err = ba.AuthenticateBytesAt(c.UserContext(), raw, RequestStart(c))
	} else if ba, ok := a.(BytesAuthenticator); ok {
		p, err = ba.AuthenticateBytes(c.UserContext(), raw)
	} else {
		p, err = a.Authenticate(c.UserContext(), string(raw))
	}
	if err != nil {
		return err
	}
	st := ensureState(c)
	st.principal, st.authed = p, true
	return nil
}

// PrincipalOf returns the authenticated caller, or the zero Principal on a
// route without Auth.
func PrincipalOf(c *fiber.Ctx) accounts.Principal {
	p, _ := principal(c)
	return p
}

// AccountOf returns the account of the authenticated caller: every
// repository call of a route is scoped to it ("" on a route without Auth).
func AccountOf(c *fiber.Ctx) string { return PrincipalOf(c).AccountID }

func principal(c *fiber.Ctx) (accounts.Principal, bool) {
	if st := stateOf(c); st != nil && st.authed {
		return st.principal, true
	}
	return accounts.Principal{}, false
}

// Require is the middleware that lets the request through only if the
// principal's scopes allow scope (write includes read of the same module).
// Otherwise it is 403 INSUFFICIENT_SCOPE naming the scope, with details
// {"requiredScope": scope}, as spec section 5 asks. Mounted on a route
// without Auth it is a wiring bug, reported as 500.
func Require(scope accounts.Scope) fiber.Handler {
	msg := "this operation needs the scope " + string(scope)
	return func(c *fiber.Ctx) error {
		p, ok := principal(c)
		if !ok {
			return platform.NewError(platform.KindInternal, platform.CodeInternal,
				"Require("+string(scope)+") on a route without Auth", nil)
		}
		if !p.Scopes.Allows(scope) {
			return platform.NewError(platform.KindForbidden, CodeInsufficientScope, msg,
				map[string]any{"requiredScope": string(scope)})
		}
		return c.Next()
	}
}
