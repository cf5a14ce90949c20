package httpx

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

// HeaderRequestID carries the request id, in and out.
const HeaderRequestID = "X-Request-Id"

// requestIDKey is HeaderRequestID as fasthttp keeps it (its canonical
// form): set with SetCanonical, the key is not normalized into a copy on
// every request.
var requestIDKey = []byte("X-Request-Id")

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
	start      time.Time // the request's (RequestStart), from AssignRequestID
	principal  accounts.Principal
	authed     bool
	// unmatched: no route matched (404, 405).
	unmatched bool
	// scribble: overwrite the request's bytes once its response is made
	// (ScribbleRequests, for tests).
	scribble bool
	// deadline is the request's context under Deadline, here rather than
	// an allocation of its own.
	deadline deadlineCtx
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
//
// It reads the clock for the whole request: the id's time, and the
// start that the access log, the deadline and the metrics time the
// request from (RequestStart).
func AssignRequestID() fiber.Handler {
	return func(c *fiber.Ctx) error {
		assignRequestID(c, ensureState(c))
		return c.Next()
	}
}

// assignRequestID is AssignRequestID's work on the request's state.
func assignRequestID(c *fiber.Ctx, st *state) {
	st.start = time.Now()
	var id string
	// The header's bytes, read in place, checked before they are copied.
	if in := c.Request().Header.Peek(HeaderRequestID); validRequestIDBytes(in) {
		id = string(in) // the logger may keep it
	} else {
		id = platform.NewRequestIDAt(st.start)
	}
	st.requestID, st.assigned = id, true
	c.Response().Header.SetCanonical(requestIDKey, []byte(id))
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

func validRequestIDBytes(s []byte) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, b := range s {
		if !requestIDByte(b) {
			return false
		}
	}
	return true
}

func requestIDByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '.' || b == '_' || b == ':' || b == '-'
}
