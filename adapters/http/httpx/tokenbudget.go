package httpx

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/ports"
)

// TokenBudget rate limits the keyless routes opened by a token in their
// address (a ticket link, a display board, a join link, a counter link):
// a waiting room's phones share one public address (the venue's Wi-Fi),
// so a budget by address alone would refuse the eighteenth customer of a
// minute. Each request spends two budgets:
//
//   - the token's own, PerToken a minute (what one screen or phone needs,
//     with room for reloads and reconnects), counted by Tokens;
//   - the address's waiting-room budget, PerAddress a minute for every
//     token-opened route together, counted by Address: a flood from one
//     address against many tokens (guessed or real) stays bounded.
//
// Static files (scripts, style sheets, catalogues) spend neither: they are
// served from [AssetSet] without a limit and cached by the browser.
type TokenBudget struct {
	// Address counts the per-address budget (the process's shared
	// limiter: in postgres mode every process draws on one budget).
	Address ports.RateLimiter
	// Tokens counts the per-token budgets. It may be the process's own
	// (memory) limiter: a token is a capability its holder already has,
	// so its budget protects the server from one runaway screen, not a
	// secret from guessing, and P processes behind a balancer letting a
	// token through P times its budget is acceptable, while a database
	// round trip for every page of every phone would not be.
	Tokens     ports.RateLimiter
	PerAddress int
	PerToken   int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Limit is the middleware of one kind of token-opened route: budget names
// the kind ("ticket", "display", "join", ...), param the route parameter
// holding the token. The rate headers are the token's budget's (or the
// address's, when that is what refuses); over either it answers 429
// RATE_LIMITED with Retry-After, before the token is even looked up.
func (b TokenBudget) Limit(budget, param string) fiber.Handler {
	now := b.Now
	if now == nil {
		now = time.Now
	}
	return func(c *fiber.Ctx) error {
		t := now()
		d, err := b.Address.Allow(c.UserContext(), "waiting-room:"+ClientIP(c), b.PerAddress, t)
		switch {
		case err != nil:
			limiterFailed(c, err)
		case !d.Allowed:
			return applyDecision(c, d, t)
		}
		d, err = b.Tokens.Allow(c.UserContext(), budget+":"+tokenKey(c.Params(param)), b.PerToken, t)
		if err != nil {
			limiterFailed(c, err)
		} else if err := applyDecision(c, d, t); err != nil {
			return err
		}
		if err := checkRequestText(c); err != nil {
			return err
		}
		return c.Next()
	}
}

// tokenKey is what a token's budget is counted under: a hash, so that
// the limiter (a table, in postgres mode) never holds a capability.
func tokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:12])
}
