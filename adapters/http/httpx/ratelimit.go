package httpx

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

// Rate-limit response headers (spec section 8).
const (
	HeaderRateLimit     = "X-RateLimit-Limit"
	HeaderRateRemaining = "X-RateLimit-Remaining"
	HeaderRateReset     = "X-RateLimit-Reset"
	HeaderRetryAfter    = "Retry-After"
)

// The rate headers' keys as fasthttp keeps them (canonical: "RateLimit"
// becomes "Ratelimit"), set with SetCanonical: SetBytesV normalized each
// key into a copy, three times a request.
var (
	rateLimitKey     = []byte("X-Ratelimit-Limit")
	rateRemainingKey = []byte("X-Ratelimit-Remaining")
	rateResetKey     = []byte("X-Ratelimit-Reset")
)

// RateLimit is the middleware that spends one request of the caller's
// per-minute budget. It keys the budget by the principal's KeyID (mount it
// after Auth; without a principal it falls back to the client IP, so it
// still bounds unauthenticated routes). now nil means the request's start
// (RequestStart, itself time.Now for a request no platform middleware
// saw), in UTC to the microsecond as platform.SystemClock: a process on
// the system clock reads it once per request.
//
// It sets X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
// (epoch seconds) before calling the rest of the chain, so they stay on
// every response of the route, errors included: the error handler writes
// the same response. Over budget it answers 429 RATE_LIMITED with
// Retry-After in seconds.
//
// If the limiter itself fails (the database is unreachable), the request
// is let through without rate headers and the failure is logged: failing
// closed would turn a limiter outage into a full API outage, and the
// request would most likely fail on the same database anyway.
func RateLimit(l ports.RateLimiter, perMinute int, now func() time.Time) fiber.Handler {
	return RateLimitBudget(l, perMinute, now, "ip")
}

// RateLimitBudget is RateLimit with the keyless requests of a client
// address counted in a budget of their own, named budget: display boards
// use "display", so other keyless traffic from the same address (everyone
// behind one NAT or proxy) cannot cut a waiting-room screen off.
func RateLimitBudget(l ports.RateLimiter, perMinute int, now func() time.Time, budget string) fiber.Handler {
	spend := spenderOf(l, perMinute, now, budget)
	return func(c *fiber.Ctx) error {
		if err := spend(c); err != nil {
			return err
		}
		if err := checkRequestText(c); err != nil {
			return err
		}
		return c.Next()
	}
}

// spender returns the budget check of RateLimit without the call to the
// rest of the chain: it sets the headers and returns the 429, or nil.
func spender(l ports.RateLimiter, perMinute int, now func() time.Time) func(c *fiber.Ctx) error {
	return spenderOf(l, perMinute, now, "ip")
}

func spenderOf(l ports.RateLimiter, perMinute int, now func() time.Time, budget string) func(c *fiber.Ctx) error {
	return func(c *fiber.Ctx) error {
		var key string
		if p, ok := principal(c); ok {
			key = p.KeyID
		} else {
			key = budget + ":" + ClientIP(c)
		}
		var t time.Time
		if now != nil {
			t = now()
		} else {
			// As platform.SystemClock spells a time.
			t = RequestStart(c).UTC().Truncate(time.Microsecond)
		}
		d, err := l.Allow(c.UserContext(), key, perMinute, t)
		if err != nil {
			limiterFailed(c, err)
			return nil
		}
		return applyDecision(c, d, t)
	}
}

// limiterFailed logs a limiter's failure; the request goes on.
func limiterFailed(c *fiber.Ctx, err error) {
	Logger(c).LogAttrs(c.UserContext(), slog.LevelWarn, "rate limiter failed; request allowed",
		slog.String("requestId", RequestID(c)), slog.String("error", err.Error()))
}

// applyDecision sets the rate headers of d and returns the 429 of a
// refused request (nil when allowed).
func applyDecision(c *fiber.Ctx, d ports.RateDecision, t time.Time) error {
	remaining := max(d.Remaining, 0)
	h := &c.Response().Header
	// The numbers are spelled into a buffer on the stack: fasthttp
	// copies header values, and strconv's strings were three of a
	// GET's allocations (issue 16).
	var num [20]byte
	h.SetCanonical(rateLimitKey, strconv.AppendInt(num[:0], int64(d.Limit), 10))
	h.SetCanonical(rateRemainingKey, strconv.AppendInt(num[:0], int64(remaining), 10))
	h.SetCanonical(rateResetKey, strconv.AppendInt(num[:0], d.Reset.Unix(), 10))
	if !d.Allowed {
		// Round up: retrying at the floor would land in the same window.
		wait := int64(max((d.Reset.Sub(t)+time.Second-1)/time.Second, 1))
		h.Set(HeaderRetryAfter, strconv.FormatInt(wait, 10))
		return platform.NewError(platform.KindRateLimited, platform.CodeRateLimited,
			fmt.Sprintf("rate limit of %d requests per minute exceeded; retry in %d seconds", d.Limit, wait),
			map[string]any{"limit": d.Limit, "retryAfter": wait, "reset": d.Reset.Unix()})
	}
	return nil
}

// Guard is Auth followed by RateLimit, with one difference: a request whose
// key is missing or refused (401, 402) spends its client IP's budget
// instead of a key's. So every /api/v1 answer carries the rate headers, the
// refusals included, and guessing keys from one address is bounded by the
// same per-minute limit. Past both, it holds the query and path to the
// text rule ([CheckRequestText]).
func Guard(a Authenticator, l ports.RateLimiter, perMinute int, now func() time.Time) fiber.Handler {
	spend := spender(l, perMinute, now)
	return func(c *fiber.Ctx) error {
		if err := authenticate(c, a); err != nil {
			if _, domain := platform.AsError(err); !domain {
				return err // infrastructure failure: nothing to count
			}
			if limited := spend(c); limited != nil {
				return limited
			}
			return err
		}
		if err := spend(c); err != nil {
			return err
		}
		if err := checkRequestText(c); err != nil {
			return err
		}
		return c.Next()
	}
}
