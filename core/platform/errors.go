package platform

import (
	"errors"
	"fmt"
)

// Kind classifies a domain error. The HTTP adapter maps each kind to a status;
// the core never speaks HTTP.
type Kind int

// The kinds of domain error.
const (
	KindInternal        Kind = iota // a bug or an infrastructure failure
	KindInvalid                     // the input breaks a rule (400)
	KindUnauthorized                // no valid credentials (401)
	KindPaymentRequired             // the account's plan does not allow it (402)
	KindForbidden                   // missing scope or another account's resource (403)
	KindNotFound                    // the resource does not exist (404)
	KindConflict                    // a business conflict with the current state (409)
	KindUnprocessable               // a well-formed request the rules refuse (422)
	KindRateLimited                 // too many requests (429)
	// KindUnavailable: storage (or the request's own deadline) failed for
	// now, not for good; the same request may succeed later (503).
	KindUnavailable
	KindGone // the resource existed and was withdrawn for good (410)
)

// Stable error codes shared by several modules. Modules define their own
// codes next to the rules that raise them.
const (
	CodeValidation      = "VALIDATION_ERROR"
	CodeNotFound        = "NOT_FOUND"
	CodeForbidden       = "FORBIDDEN"
	CodeUnauthorized    = "UNAUTHORIZED"
	CodePremiumRequired = "PREMIUM_REQUIRED"
	CodeRateLimited     = "RATE_LIMITED"
	CodeInternal        = "INTERNAL_ERROR"
	CodeInvalidCursor   = "INVALID_CURSOR"
	CodeUnavailable     = "SERVICE_UNAVAILABLE"
)

// Error is a domain error: a kind, a stable uppercase code, a human message
// and structured details. It is what use cases return for every refusal.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// NewError builds a domain error.
func NewError(kind Kind, code, message string, details map[string]any) *Error {
	return &Error{Kind: kind, Code: code, Message: message, Details: details}
}

// AsError finds a domain error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// IsCode reports whether err carries the domain error code.
func IsCode(err error, code string) bool {
	e, ok := AsError(err)
	return ok && e.Code == code
}

// NotFound reports a missing resource of the named kind ("queue", "turn").
func NotFound(resource, id string) *Error {
	return NewError(KindNotFound, CodeNotFound, fmt.Sprintf("%s %q not found", resource, id),
		map[string]any{"resource": resource, "id": id})
}

// ForeignResource reports a resource that belongs to another account. The
// message names the kind only: nothing of the resource leaks.
func ForeignResource(resource string) *Error {
	return NewError(KindForbidden, CodeForbidden, "the "+resource+" belongs to another account",
		map[string]any{"resource": resource})
}

// Conflict reports a business conflict with its own code.
func Conflict(code, message string, details map[string]any) *Error {
	return NewError(KindConflict, code, message, details)
}

// Unprocessable reports a request the business rules refuse.
func Unprocessable(code, message string, details map[string]any) *Error {
	return NewError(KindUnprocessable, code, message, details)
}

// FieldError is one failing field of a validation error: the JSON path of
// the field (for example "schedule.weekly[0].open"), the rule it broke
// ("required", "max", "oneof", ...) and a readable message.
type FieldError struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Invalid builds the VALIDATION_ERROR carrying every failing field.
func Invalid(fields ...FieldError) *Error {
	msg := "the request is invalid"
	if len(fields) == 1 {
		msg = fields[0].Path + ": " + fields[0].Message
	} else if len(fields) > 1 {
		msg = fmt.Sprintf("%d fields are invalid", len(fields))
	}
	return NewError(KindInvalid, CodeValidation, msg, map[string]any{"fields": fields})
}

// InvalidField is Invalid for a single field.
func InvalidField(path, rule, message string) *Error {
	return Invalid(FieldError{Path: path, Rule: rule, Message: message})
}

// FieldErrors returns the failing fields of err when it is a
// VALIDATION_ERROR (Invalid), nil otherwise: the one reader of the
// details' "fields" member.
func FieldErrors(err error) []FieldError {
	e, ok := AsError(err)
	if !ok || e.Code != CodeValidation {
		return nil
	}
	fields, _ := e.Details["fields"].([]FieldError)
	return fields
}

// FieldRules is FieldErrors as a map from each failing path to its rule.
func FieldRules(err error) map[string]string {
	out := map[string]string{}
	for _, f := range FieldErrors(err) {
		out[f.Path] = f.Rule
	}
	return out
}
