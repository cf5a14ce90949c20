package adminhttp

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/platform"
)

// DefaultFailuresPerMinute is the brake's budget when none is configured.
const DefaultFailuresPerMinute = 10

// maxTracked bounds the addresses the brake remembers, so a flood from
// many addresses cannot grow its memory without end. Past it, expired
// windows are dropped; if none has expired, the oldest window goes.
const maxTracked = 100_000

// Brake limits failed admin authentications per client address (as
// resolved with http.trusted_proxies): after perMinute wrong or missing
// tokens in a one-minute window, every request from that address is 429
// RATE_LIMITED until the window ends, the right token included, so the
// brake cannot be used as an oracle. Other addresses are unaffected.
//
// The count lives in the process: with several processes behind a load
// balancer, an address gets perMinute failures on each. That is enough
// for a brake on guessing a 16+ character token, and keeps the admin
// API's refusals off the database that the API-key limiter shares.
type Brake struct {
	perMinute int
	now       func() time.Time

	mu   sync.Mutex
	wins map[string]*failWindow
}

type failWindow struct {
	start    time.Time
	failures int
}

// NewBrake returns a brake allowing perMinute failures per address
// (DefaultFailuresPerMinute when not positive); now nil is time.Now.
func NewBrake(perMinute int, now func() time.Time) *Brake {
	if perMinute <= 0 {
		perMinute = DefaultFailuresPerMinute
	}
	if now == nil {
		now = time.Now
	}
	return &Brake{perMinute: perMinute, now: now, wins: map[string]*failWindow{}}
}

// state returns the address's live window (nil when none), dropping an
// expired one. Called with b.mu held.
func (b *Brake) state(addr string, t time.Time) *failWindow {
	w := b.wins[addr]
	if w != nil && !t.Before(w.start.Add(time.Minute)) {
		delete(b.wins, addr)
		return nil
	}
	return w
}

// blocked reports the address's window when it has spent its budget.
func (b *Brake) blocked(addr string, t time.Time) (failWindow, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.state(addr, t); w != nil && w.failures >= b.perMinute {
		return *w, true
	}
	return failWindow{}, false
}

// fail counts one failure of addr and returns its window after it.
func (b *Brake) fail(addr string, t time.Time) failWindow {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.state(addr, t)
	if w == nil {
		if len(b.wins) >= maxTracked {
			b.prune(t)
		}
		w = &failWindow{start: t}
		b.wins[addr] = w
	}
	w.failures++
	return *w
}

// prune drops expired windows, or the oldest one when none has expired.
func (b *Brake) prune(t time.Time) {
	var oldest string
	for a, w := range b.wins {
		if !t.Before(w.start.Add(time.Minute)) {
			delete(b.wins, a)
		} else if oldest == "" || w.start.Before(b.wins[oldest].start) {
			oldest = a
		}
	}
	if len(b.wins) >= maxTracked && oldest != "" {
		delete(b.wins, oldest)
	}
}

// guard wraps the token check: a blocked address is refused before the
// check, and a failed check is counted. Both answers carry the
// X-RateLimit-* headers of the address's failure budget.
func (b *Brake) guard(check func(c *fiber.Ctx) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		addr, t := httpx.ClientIP(c), b.now()
		if w, ok := b.blocked(addr, t); ok {
			return b.refuse(c, w, t)
		}
		err := check(c)
		if err == nil {
			return c.Next()
		}
		w := b.fail(addr, t)
		b.headers(c, w)
		return err
	}
}

func (b *Brake) headers(c *fiber.Ctx, w failWindow) {
	h := &c.Response().Header
	h.Set(httpx.HeaderRateLimit, strconv.Itoa(b.perMinute))
	h.Set(httpx.HeaderRateRemaining, strconv.Itoa(max(b.perMinute-w.failures, 0)))
	h.Set(httpx.HeaderRateReset, strconv.FormatInt(w.start.Add(time.Minute).Unix(), 10))
}

func (b *Brake) refuse(c *fiber.Ctx, w failWindow, t time.Time) error {
	b.headers(c, w)
	reset := w.start.Add(time.Minute)
	// Round up: retrying at the floor would land in the same window.
	wait := int64(max((reset.Sub(t)+time.Second-1)/time.Second, 1))
	c.Response().Header.Set(httpx.HeaderRetryAfter, strconv.FormatInt(wait, 10))
	return platform.NewError(platform.KindRateLimited, platform.CodeRateLimited,
		fmt.Sprintf("too many failed admin authentications from this address (%d per minute); retry in %d seconds", b.perMinute, wait),
		map[string]any{"limit": b.perMinute, "retryAfter": wait, "reset": reset.Unix()})
}
