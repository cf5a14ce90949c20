package httpx

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

// RetryAfterSeconds is the Retry-After of every 503 SERVICE_UNAVAILABLE: a
// database restart or a failover takes seconds, and a client retrying
// sooner would only add to the load that greets it.
const RetryAfterSeconds = 2

// Deadline is the middleware that bounds a request's work: its context (the
// one handed to every use case) ends after d, so a request whose client has
// gone, or that waits on a database that does not answer, stops instead of
// committing minutes later. A unit of work whose context ends rolls back.
// Event streams (IsEventStream) are exempt: they live as long as their
// client. d <= 0 leaves requests unbounded.
func Deadline(d time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if d <= 0 || IsEventStream(&c.Request().Header) {
			return c.Next()
		}
		if dc, cancel := setDeadline(c, ensureState(c), d); dc != nil {
			defer dc.cancel(context.Canceled)
		} else {
			defer cancel()
		}
		return c.Next()
	}
}

// setDeadline bounds the request's context to d from its start (the
// access log's: one reading of the clock less). End it when the request
// ends with dc.cancel(context.Canceled), or with cancel when dc is nil
// (a parent context withDeadline does not apply to).
func setDeadline(c *fiber.Ctx, st *state, d time.Duration) (dc *deadlineCtx, cancel context.CancelFunc) {
	deadline := RequestStart(c).Add(d)
	if dc := &st.deadline; dc.init(c.UserContext(), deadline) {
		c.SetUserContext(dc)
		return dc, nil
	}
	ctx, cancel := context.WithDeadline(c.UserContext(), deadline)
	c.SetUserContext(ctx)
	return nil, cancel
}

// isUnavailable reports whether err is a fault that passes: storage the
// classifier recognises as unreachable, or the request's own deadline.
func isUnavailable(c *fiber.Ctx, err error, unavailable func(error) bool) bool {
	if pe, ok := platform.AsError(err); ok {
		return pe.Kind == platform.KindUnavailable
	}
	if errors.Is(err, context.DeadlineExceeded) || c.UserContext().Err() != nil {
		return true
	}
	return unavailable != nil && unavailable(err)
}

// errUnavailable is the 503 answer for err; the cause is logged, never
// sent.
func errUnavailable(c *fiber.Ctx, err error) error {
	if pe, ok := platform.AsError(err); ok && pe.Kind == platform.KindUnavailable {
		return err
	}
	msg := "the service cannot reach its storage right now; retry after a few seconds"
	if errors.Is(err, context.DeadlineExceeded) || c.UserContext().Err() != nil {
		msg = "the request did not finish within the server's deadline; retry after a few seconds"
	}
	return platform.NewError(platform.KindUnavailable, platform.CodeUnavailable, msg,
		map[string]any{"retryAfter": RetryAfterSeconds})
}
