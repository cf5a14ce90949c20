package httpx

import (
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

// HeaderRequestID carries the request id, in and out.
const HeaderRequestID = "X-Request-Id"

// Locals keys. Unexported types keep other packages from colliding.
type localKey int

// keyState holds the request's *state.
const keyState localKey = 0

// state is what the platform's middleware knows of a request, under one
// Locals key: one allocation, and one look-up finding it first among the
// request's locals. Seven keys of their own took three allocations (a
// string or a principal boxed for Locals) and a scan of the locals each,
// a dozen times a request (issue 16, P1).
type state struct {
	proxies  *Proxies
	clientIP string
	hasIP    bool
	// requestID is AssignRequestID's (assigned), or else fallbackID, made
	// when the request skipped the middleware (see RequestID).
	requestID  string
	assigned   bool
	fallbackID string
	logger     *slog.Logger
	start      time.Time // AccessLog's (RequestStart)
	principal  accounts.Principal
	authed     bool
	// unmatched: no route matched (404, 405).
	unmatched bool
}

// stateOf is the request's state, nil when no middleware set one.
func stateOf(c *fiber.Ctx) *state {
	st, _ := c.Locals(keyState).(*state)
	return st
}

// ensureState is the request's state, made when none is there.
func ensureState(c *fiber.Ctx) *state {
	if st := stateOf(c); st != nil {
		return st
	}
	st := &state{}
	c.Locals(keyState, st)
	return st
}

// AssignRequestID is the middleware that gives every request an id: a well-formed
// incoming X-Request-Id (1-128 characters of [A-Za-z0-9._:-]) is kept, so a
// caller or proxy can correlate its logs with ours; anything else is
// replaced by a fresh "req_..." id, since an arbitrary header value must not
// reach our logs. The id is set on the response header.
func AssignRequestID() fiber.Handler {
	return func(c *fiber.Ctx) error {
		id := c.Get(HeaderRequestID)
		if validRequestID(id) {
			// fiber's strings alias the request buffer; the id outlives
			// nothing here, but the logger may keep it.
			id = strings.Clone(id)
		} else {
			id = platform.NewID(platform.PrefixRequest)
		}
		st := ensureState(c)
		st.requestID, st.assigned = id, true
		c.Set(HeaderRequestID, id)
		return c.Next()
	}
}

// RequestID returns the request's id, never empty: a request that did not
// pass through the middleware (the server rejected it before routing) gets
// one now, set on the response header too, so error envelopes always carry
// an id equal to the header.
func RequestID(c *fiber.Ctx) string {
	st := ensureState(c)
	if st.assigned {
		return st.requestID
	}
	// Kept apart, so passedMiddleware still tells that the request
	// skipped the middleware.
	if st.fallbackID != "" {
		return st.fallbackID
	}
	st.fallbackID = platform.NewID(platform.PrefixRequest)
	c.Set(HeaderRequestID, st.fallbackID)
	return st.fallbackID
}

// passedMiddleware reports whether the AssignRequestID middleware saw c; only
// then does the access log see it too.
func passedMiddleware(c *fiber.Ctx) bool {
	st := stateOf(c)
	return st != nil && st.assigned
}

func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9',
			b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}
