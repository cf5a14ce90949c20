package httpx

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

// HeaderRequestID carries the request id, in and out.
const HeaderRequestID = "X-Request-Id"

// Locals keys. Unexported types keep other packages from colliding.
type localKey int

const (
	keyRequestID localKey = iota
	keyFallbackID
	keyPrincipal
	keyLogger
	keyUnmatched
	keyProxies
	keyClientIP
)

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
		c.Locals(keyRequestID, id)
		c.Set(HeaderRequestID, id)
		return c.Next()
	}
}

// RequestID returns the request's id, never empty: a request that did not
// pass through the middleware (the server rejected it before routing) gets
// one now, set on the response header too, so error envelopes always carry
// an id equal to the header.
func RequestID(c *fiber.Ctx) string {
	if id, ok := c.Locals(keyRequestID).(string); ok {
		return id
	}
	// Stored under its own key, so passedMiddleware still tells that the
	// request skipped the middleware.
	if id, ok := c.Locals(keyFallbackID).(string); ok {
		return id
	}
	id := platform.NewID(platform.PrefixRequest)
	c.Locals(keyFallbackID, id)
	c.Set(HeaderRequestID, id)
	return id
}

// passedMiddleware reports whether the AssignRequestID middleware saw c; only
// then does the access log see it too.
func passedMiddleware(c *fiber.Ctx) bool {
	_, ok := c.Locals(keyRequestID).(string)
	return ok
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
