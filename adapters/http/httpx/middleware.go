package httpx

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Recover is the middleware that turns a panic further down the chain into
// a 500 INTERNAL_ERROR envelope, logging the panic value and stack (the
// body says nothing of it). One bad handler must not take the process down.
func Recover(log *slog.Logger) fiber.Handler {
	if log == nil {
		log = slog.Default()
	}
	return func(c *fiber.Ctx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = panicked(c, log, r)
			}
		}()
		return c.Next()
	}
}

// panicked logs the panic r, recovered with its stack still in place, and
// returns the error it becomes.
func panicked(c *fiber.Ctx, log *slog.Logger, r any) error {
	log.LogAttrs(c.UserContext(), slog.LevelError, "panic",
		slog.String("requestId", RequestID(c)),
		slog.String("method", c.Method()),
		slog.String("route", routeOf(c)),
		slog.String("panic", fmt.Sprint(r)),
		slog.String("stack", string(debug.Stack())))
	return fmt.Errorf("panic: %v", r)
}

// AccessLog is the middleware that logs one line per request: method, route
// template (for example /api/v1/queues/:queueId, so ids do not explode log
// cardinality), status, duration, requestId and the principal's account.
// Headers, keys, query strings and bodies are never logged: they carry
// secrets and personal data.
//
// It runs the error handler itself on an error from the chain, like fiber's
// logger does, so the line carries the status the client really got; it
// then returns nil, so the error is not handled twice.
func AccessLog(log *slog.Logger) fiber.Handler {
	if log == nil {
		log = slog.Default()
	}
	return func(c *fiber.Ctx) error {
		st := ensureState(c)
		start := st.start // AssignRequestID's clock reading
		if start.IsZero() {
			start = time.Now()
			st.start = start
		}
		st.logger = log
		if err := c.Next(); err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		// The monotonic clock only (time.Since), the wall time from the
		// start's: about half the cost of time.Now here.
		d := time.Since(start)
		logAccess(c, log, c.Response().StatusCode(), start.Add(d), d)
		return nil
	}
}

// logAccess writes the access line. It builds the record itself and hands
// it to the handler, as slog's documentation shows for wrappers: Logger's
// methods capture the caller's program counter on every call
// (runtime.Callers, 3% of a memory-mode GET's CPU in issue 16's profile)
// for a source the handler is not asked to write, and read the clock
// again. The line is the same: the handler writes it. A handler that
// writes access lines itself (AccessHandler) is given the line instead.
func logAccess(c *fiber.Ctx, log *slog.Logger, status int, end time.Time, d time.Duration) {
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	ctx := c.UserContext()
	h := log.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	var account string
	if p, ok := principal(c); ok {
		account = p.AccountID
	}
	l := AccessLine{Time: end, Level: level, Method: c.Method(), Route: routeOf(c), Status: status, Duration: d,
		RequestID: RequestID(c), Account: account, Client: ClientIP(c)}
	if ah, ok := h.(AccessHandler); ok {
		if done, _ := ah.HandleAccess(ctx, l); done {
			return
		}
	}
	_ = h.Handle(ctx, l.Record())
}

// RequestStart is when the request began (AssignRequestID's reading of
// the clock, or AccessLog's), for the middleware that time the request
// (AccessLog, Deadline, the metrics): the clock is read once for them all
// (it was 6 % of a memory-mode GET's handler CPU, read eight times, issue
// 16). time.Now() for a request neither saw.
func RequestStart(c *fiber.Ctx) time.Time {
	if st := stateOf(c); st != nil && !st.start.IsZero() {
		return st.start
	}
	return time.Now()
}

// Logger returns the logger of the app that serves c, for middleware and
// handlers that have none of their own; slog.Default() outside an app
// built by NewApp.
func Logger(c *fiber.Ctx) *slog.Logger {
	if st := stateOf(c); st != nil && st.logger != nil {
		return st.logger
	}
	return slog.Default()
}

// routeOf is the template of the route that handled c, or "-" when no
// route matched (404, 405, or a request refused before routing): the
// last route fiber saw then is a middleware's, which would mislead.
func routeOf(c *fiber.Ctx) string {
	if st := stateOf(c); st == nil || st.unmatched || !st.assigned {
		return "-"
	}
	if r := c.Route(); r != nil && r.Path != "" {
		return r.Path
	}
	return "-"
}

func markUnmatched(c *fiber.Ctx) { ensureState(c).unmatched = true }
