package httpx

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gofiber/fiber/v2"
)

// DefaultBodyLimit is the request body limit when AppConfig.BodyLimit is
// zero. The spec names none; 1 MiB is far above the largest legitimate body
// (a bulk of 1000 access codes) and small enough to refuse abuse early.
const DefaultBodyLimit = 1 << 20

// DefaultHeaderLimit is the largest request line and headers together
// when AppConfig.HeaderLimit is zero: 16 KiB, what common proxies allow
// (nginx's large_client_header_buffers 8k per line, up to 16 KiB with
// SSO cookies; the spec names none). fasthttp's own default, 4 KiB,
// refused ordinary long query strings and cookies.
const DefaultHeaderLimit = 16 << 10

// AppConfig configures [NewApp].
type AppConfig struct {
	// Logger receives access lines, panics and internal errors. Nil means
	// slog.Default().
	Logger *slog.Logger
	// BodyLimit is the largest accepted request body in bytes; larger
	// bodies get 413 PAYLOAD_TOO_LARGE. Zero means DefaultBodyLimit.
	BodyLimit int
	// HeaderLimit is the largest request line and headers together, in
	// bytes; larger requests get 431 REQUEST_HEADER_FIELDS_TOO_LARGE.
	// Zero means DefaultHeaderLimit.
	HeaderLimit int
	// Timeouts bound slow and idle connections; zero values leave them
	// off (tests), the process sets them from the configuration.
	Timeouts Timeouts
	// Proxies says whose forwarding headers count and the public base URL.
	Proxies Proxies
	// RequestTimeout bounds each request's work (Deadline); zero leaves it
	// unbounded (tests).
	RequestTimeout time.Duration
	// Then are middleware for every request, run after the platform's
	// (the metrics'), in the same step of fiber's router: one route
	// match and hop less than an app.Use of their own.
	Then []fiber.Handler
	// Unavailable tells the errors of storage that cannot be reached for
	// now (the storage's ports.FaultClassifier): they answer 503
	// SERVICE_UNAVAILABLE with Retry-After instead of 500. Nil: none but
	// the request's own deadline.
	Unavailable func(error) bool
}

// NewApp builds the fiber application with the platform behaviour every
// endpoint relies on: the error envelope as error handler, the body limit,
// json/v2 as response encoder, no startup banner, and the middleware every
// request passes through, in this order: [RequestID], [AccessLog],
// [Recover], [Deadline], [CheckRequestText]. The order matters: the access log must see the request id and
// the final status, and panics must become errors inside the access log.
//
// Fiber answers 405 METHOD_NOT_ALLOWED (with an Allow header) by itself when
// the path exists under another method; no configuration is needed for it.
// Register routes on the returned app, then optionally [NotFound] last.
func NewApp(cfg AppConfig) *fiber.App {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	limit := cfg.BodyLimit
	if limit <= 0 {
		limit = DefaultBodyLimit
	}
	headers := cfg.HeaderLimit
	if headers <= 0 {
		headers = DefaultHeaderLimit
	}
	app := fiber.New(fiber.Config{
		ErrorHandler: errorHandler(log, cfg.Unavailable),
		BodyLimit:    limit,
		// The read buffer bounds the request line and headers together
		// (fasthttp answers ErrSmallBuffer past it, which the error
		// handler turns into 431 in the envelope).
		ReadBufferSize:        headers,
		JSONEncoder:           encodeJSON,
		JSONDecoder:           decodeJSONStrict,
		DisableStartupMessage: true,
		// Routes are matched exactly as the spec writes them.
		CaseSensitive: true,
		// Immutable stays off: fiber's params, queries, headers and path
		// point into buffers reused by the next request, and a handler
		// copies (strings.Clone) exactly what it keeps past its return:
		// what a write's use case stores, a map's key, a stream's filter.
		// Copying every value instead was about 3 % of a memory-mode GET's
		// CPU (issue 30, P1). ScribbleRequests makes the end-to-end tests
		// catch an alias kept (docs/decisions.md).
	})
	applyTimeouts(app.Server(), cfg.Timeouts)
	// Event streams hijack their connections and close them themselves
	// (streamhttp), so fasthttp frees each request's context at once
	// instead of holding it for the stream's life.
	app.Server().KeepHijackedConns = true
	ignoreLostConnections(app.Server())
	chain := []any{platformMiddleware(log, cfg.Proxies, cfg.RequestTimeout)}
	for _, h := range cfg.Then {
		chain = append(chain, h)
	}
	app.Use(chain...)
	return app
}

// platformMiddleware is the client's address, [AssignRequestID],
// [AccessLog], [Recover], [Deadline] and [CheckRequestText], in this
// order, in one handler: each step as its own middleware does it, and
// the steps' ends (the deadline's cancel, the recover, the access log's
// error handling and line) in the same order too. Six hops through
// fiber's Next and six look-ups of the request's state were about 1 % of
// a memory-mode GET's CPU (issue 30).
func platformMiddleware(log *slog.Logger, p Proxies, timeout time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := ensureState(c)
		setClient(c, st, &p)
		assignRequestID(c, st)
		start := st.start
		st.logger = log
		if err := platformInner(c, st, log, timeout); err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		d := time.Since(start)
		logAccess(c, log, c.Response().StatusCode(), start.Add(d), d)
		if st.scribble {
			scribble(c)
		}
		return nil
	}
}

// platformInner is platformMiddleware's Recover, Deadline and
// CheckRequestText, and the rest of the chain.
func platformInner(c *fiber.Ctx, st *state, log *slog.Logger, timeout time.Duration) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicked(c, log, r)
		}
	}()
	if timeout > 0 && !IsEventStream(&c.Request().Header) {
		if dc, cancel := setDeadline(c, st, timeout); dc != nil {
			defer dc.cancel(context.Canceled)
		} else {
			defer cancel()
		}
	}
	if !strings.HasPrefix(c.Path(), "/api/") {
		if err := checkRequestText(c); err != nil {
			return err
		}
	}
	return c.Next()
}

// NotFound is the catch-all to mount last (app.Use(httpx.NotFound())). It
// hands the request back to fiber's router past the end of the stack, so the
// router decides between 404 (no such path) and 405 (the path exists under
// another method, with the Allow header); the error handler turns both into
// the envelope. Mounting it is optional, since unmatched requests end the
// same way without it; it documents in the route table that nothing follows.
func NotFound() fiber.Handler {
	return func(c *fiber.Ctx) error { return c.Next() }
}

// encodeJSON encodes responses with json/v2: nil slices and maps encode as
// [] and {} (so "data" is never null), `omitzero` works with Optional and
// Nullable, and map keys are sorted so responses are stable for tests and
// caches. Invalid UTF-8 is replaced rather than failing the whole response.
func encodeJSON(v any) ([]byte, error) {
	return json.Marshal(v, json.Deterministic(true), jsontext.AllowInvalidUTF8(true))
}

// decodeJSONStrict keeps fiber's BodyParser as strict as [Decode] for
// anyone who calls it; Decode remains the way to read bodies, since it also
// maps failures to VALIDATION_ERROR fields.
func decodeJSONStrict(data []byte, v any) error {
	return json.Unmarshal(data, v, decodeOptions)
}
