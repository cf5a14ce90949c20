package httpx

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

// Codes the HTTP layer raises itself; domain codes live in core.
const (
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeHeadersTooLarge      = "REQUEST_HEADER_FIELDS_TOO_LARGE"
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	CodeInsufficientScope    = "INSUFFICIENT_SCOPE"
)

// statusByKind maps each domain error kind to its status (spec section 7).
var statusByKind = map[platform.Kind]int{
	platform.KindInvalid:         http.StatusBadRequest,
	platform.KindUnauthorized:    http.StatusUnauthorized,
	platform.KindPaymentRequired: http.StatusPaymentRequired,
	platform.KindForbidden:       http.StatusForbidden,
	platform.KindNotFound:        http.StatusNotFound,
	platform.KindConflict:        http.StatusConflict,
	platform.KindUnprocessable:   http.StatusUnprocessableEntity,
	platform.KindRateLimited:     http.StatusTooManyRequests,
	platform.KindGone:            http.StatusGone,
	platform.KindInternal:        http.StatusInternalServerError,
	platform.KindUnavailable:     http.StatusServiceUnavailable,
}

// StatusOf returns the HTTP status of a domain error kind; unknown kinds
// are 500, so a kind added to core without a mapping fails loudly.
func StatusOf(k platform.Kind) int {
	if s, ok := statusByKind[k]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// statusError is an error the HTTP layer raises with a status that has no
// domain kind (415). It exists here rather than in core because media types
// are an HTTP concern the core never sees.
type statusError struct {
	status  int
	code    string
	message string
	details map[string]any
}

func (e *statusError) Error() string { return e.code + ": " + e.message }

// envelope is the error body of spec section 7.
type envelope struct {
	Error envelopeError `json:"error"`
}

type envelopeError struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details"`
	RequestID string         `json:"requestId"`
}

const genericInternalMessage = "an internal error occurred; quote the requestId when reporting it"

// ErrorHandler is the fiber error handler that writes every error as the
// envelope {"error":{"code","message","details","requestId"}}:
//
//   - *platform.Error: the status of its kind, its code, message and details;
//   - *fiber.Error from the router and server: 404 NOT_FOUND "no route ...",
//     405 METHOD_NOT_ALLOWED, 413 PAYLOAD_TOO_LARGE, 400 VALIDATION_ERROR,
//     other statuses a code derived from the status text;
//   - anything else, and every 5xx: 500 INTERNAL_ERROR with a generic
//     message. The real error is logged with the request id, never sent.
//
// details is always an object, and requestId always equals the
// X-Request-Id response header.
func ErrorHandler(log *slog.Logger) fiber.ErrorHandler { return errorHandler(log, nil) }

// errorHandler is ErrorHandler that also answers 503 SERVICE_UNAVAILABLE,
// with Retry-After, for the errors unavailable recognises (storage that
// cannot be reached) and for a request past its deadline: faults that end,
// which a client may retry, never 500.
func errorHandler(log *slog.Logger, unavailable func(error) bool) fiber.ErrorHandler {
	if log == nil {
		log = slog.Default()
	}
	return func(c *fiber.Ctx, cause error) error {
		err := cause
		if isUnavailable(c, err, unavailable) {
			err = errUnavailable(c, err)
		}
		status, body := classify(c, err)
		if status == http.StatusServiceUnavailable {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(RetryAfterSeconds))
		}
		body.RequestID = RequestID(c)
		if body.Details == nil {
			body.Details = map[string]any{}
		}
		if status >= 500 {
			log.LogAttrs(c.UserContext(), slog.LevelError, "request failed",
				slog.String("requestId", body.RequestID),
				slog.String("method", c.Method()),
				slog.String("route", routeOf(c)),
				slog.Int("status", status),
				slog.String("error", cause.Error()))
		}
		if !passedMiddleware(c) {
			// Errors raised by the server before routing (413, malformed
			// requests) never reach AccessLog: log their line here.
			logAccess(c, log, status, time.Now(), 0)
		}
		if err := c.Status(status).JSON(envelope{Error: body}); err != nil {
			// Details the encoder cannot write (a domain bug) must still
			// produce an envelope, not fiber's bare text 500.
			log.LogAttrs(c.UserContext(), slog.LevelError, "error envelope not encodable",
				slog.String("requestId", body.RequestID), slog.String("error", err.Error()))
			c.Status(fiber.StatusInternalServerError).Type("json")
			return c.SendString(`{"error":{"code":"` + platform.CodeInternal + `","message":"` + genericInternalMessage +
				`","details":{},"requestId":"` + body.RequestID + `"}}`)
		}
		return nil
	}
}

// Fail writes err as the error envelope now, through the app's error
// handler, and returns what it returns. Handlers normally just return the
// error; Fail is for code that must answer without returning it (for
// example a middleware that ends the chain but reports success to the
// middleware around it).
func Fail(c *fiber.Ctx, err error) error {
	return c.App().ErrorHandler(c, err)
}

func classify(c *fiber.Ctx, err error) (int, envelopeError) {
	if pe, ok := platform.AsError(err); ok {
		status := StatusOf(pe.Kind)
		if status == http.StatusServiceUnavailable {
			return status, envelopeError{Code: platform.CodeUnavailable, Message: pe.Message, Details: pe.Details}
		}
		if status >= 500 {
			return http.StatusInternalServerError, envelopeError{Code: platform.CodeInternal, Message: genericInternalMessage}
		}
		return status, envelopeError{Code: pe.Code, Message: pe.Message, Details: pe.Details}
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.status, envelopeError{Code: se.code, Message: se.message, Details: se.details}
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return classifyFiber(c, fe)
	}
	return http.StatusInternalServerError, envelopeError{Code: platform.CodeInternal, Message: genericInternalMessage}
}

// classifyFiber maps fiber's own errors. Their messages are not reused:
// fasthttp's parse errors can echo raw request bytes.
func classifyFiber(c *fiber.Ctx, fe *fiber.Error) (int, envelopeError) {
	switch fe.Code {
	case fiber.StatusNotFound:
		markUnmatched(c)
		return fe.Code, envelopeError{Code: platform.CodeNotFound,
			Message: fmt.Sprintf("no route %s %s", c.Method(), c.Path())}
	case fiber.StatusMethodNotAllowed:
		markUnmatched(c)
		allowed := strings.Split(string(c.Response().Header.Peek(fiber.HeaderAllow)), ", ")
		return fe.Code, envelopeError{Code: CodeMethodNotAllowed,
			Message: fmt.Sprintf("method %s is not allowed on %s", c.Method(), c.Path()),
			Details: map[string]any{"allowed": allowed}}
	case fiber.StatusRequestEntityTooLarge:
		limit := c.App().Config().BodyLimit
		return fe.Code, envelopeError{Code: CodePayloadTooLarge,
			Message: fmt.Sprintf("the request body exceeds %d bytes", limit),
			Details: map[string]any{"limit": limit}}
	case fiber.StatusRequestHeaderFieldsTooLarge:
		// The request line and headers overflowed the read buffer
		// (AppConfig.HeaderLimit): a long query string or big cookies.
		limit := c.App().Config().ReadBufferSize
		return fe.Code, envelopeError{Code: CodeHeadersTooLarge,
			Message: fmt.Sprintf("the request line and headers together exceed %d bytes", limit),
			Details: map[string]any{"limit": limit}}
	case fiber.StatusBadRequest:
		return fe.Code, envelopeError{Code: platform.CodeValidation, Message: "the request is malformed"}
	}
	if fe.Code >= 500 || fe.Code < 400 {
		return http.StatusInternalServerError, envelopeError{Code: platform.CodeInternal, Message: genericInternalMessage}
	}
	text := http.StatusText(fe.Code)
	if text == "" {
		text = "Client Error"
	}
	return fe.Code, envelopeError{Code: strings.ToUpper(strings.ReplaceAll(text, " ", "_")), Message: strings.ToLower(text)}
}
