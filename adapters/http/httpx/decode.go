package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

// Rules of the VALIDATION_ERROR fields that Decode reports.
const (
	RuleUnknownField   = "unknown_field"
	RuleDuplicateField = "duplicate_field"
	RuleType           = "type"
	RuleMalformedJSON  = "malformed_json"
	RuleTrailingData   = "trailing_data"
)

// decodeOptions make json/v2 as strict as the spec's "bodies are strict".
// Each is spelled out, although several are json/v2's defaults, because
// the v1 compatibility options flip them and this is the contract.
var decodeOptions = json.JoinOptions(
	json.RejectUnknownMembers(true),       // unknown members at any depth
	json.MatchCaseInsensitiveNames(false), // "Name" is not "name"
	jsontext.AllowDuplicateNames(false),   // {"a":1,"a":2} is refused, not last-wins
	jsontext.AllowInvalidUTF8(false),
	json.WithUnmarshalers(json.JoinUnmarshalers(patchFields, shorthands, rejectNull, noNegativeZero)),
)

// noNegativeZero reads a number inside free JSON (an `any`, such as an
// access code's properties) as float64 like json/v2 does, but -0 as 0:
// PostgreSQL's jsonb has no negative zero, so a stored -0 would read back
// as 0 while the 201 showed -0.
var noNegativeZero = json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *any) error {
	if dec.PeekKind() != '0' {
		return errors.ErrUnsupported
	}
	var f float64
	if err := json.UnmarshalDecode(dec, &f); err != nil {
		return err
	}
	if f == 0 {
		f = 0 // drops the sign of -0
	}
	*v = f
	return nil
})

// patchFields decode the core's PATCH fields (platform.Patch) with these
// same strict rules: their UnmarshalJSON would fall back to encoding/json,
// which ignores unknown members, duplicates and case.
var patchFields = json.UnmarshalFromFunc(func(dec *jsontext.Decoder, p platform.PatchField) error {
	if dec.PeekKind() == 'n' {
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		p.MarkPresent(true)
		return nil
	}
	p.MarkPresent(false)
	return json.UnmarshalDecode(dec, p.ValueTarget())
})

// shorthands decode values that are an object or a bare string
// (platform.StringShorthand), the object strictly.
var shorthands = json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v platform.StringShorthand) error {
	if dec.PeekKind() == '"' {
		var s string
		if err := json.UnmarshalDecode(dec, &s); err != nil {
			return err
		}
		v.FromString(s)
		return nil
	}
	return json.UnmarshalDecode(dec, v.ObjectTarget())
})

// Decode reads the request body as JSON into dst (a pointer) and handles
// JSON structure and the one text rule of every string; the other rules on
// values belong to the core's validators.
//
// It refuses, as 400 VALIDATION_ERROR with details.fields naming the JSON
// path ("location.lat", "stations[2].label") and rule:
//   - members dst does not declare, at any depth (unknown_field); names
//     match case-sensitively, so "Name" is unknown where "name" is expected;
//   - a name repeated in one object (duplicate_field);
//   - a value of the wrong JSON type, including null where the Go field is
//     not a pointer, an interface, Optional or Nullable (type, naming the
//     expected type); null is never read as "zero value", so a client never
//     clears a field by accident;
//   - syntax errors, invalid UTF-8, a truncated body (malformed_json);
//   - anything after the value, such as {}{} (trailing_data);
//   - a string, at any depth, map keys and values inside `any` included,
//     that breaks the text rule of its field (platform.CheckText, by the
//     field's `text` tag: plain by default, "free", "name"):
//     control_character, bidi_control, invisible_character,
//     no_visible_character. So no NUL or other control character reaches
//     a repository, whatever the storage.
//
// An empty (or all-whitespace) body decodes as {}, so endpoints whose body
// is optional or has no required member accept a bare POST. A non-empty body
// must be sent as application/json (or a +json type) in UTF-8: anything else
// is 415 UNSUPPORTED_MEDIA_TYPE rather than 400, because the body may be
// perfectly valid in a format we do not speak, and 415 tells the client to
// fix the header, not the content.
//
// A Content-Encoding other than identity is 415 too. fiber's c.Body() would
// inflate gzip, deflate or brotli with no limit after BodyLimit was checked
// on the compressed bytes (a decompression bomb), and on failure it returns
// the error text as the body; request bodies here are small, so Decode
// reads the raw body and refuses compression.
func Decode(c *fiber.Ctx, dst any) error {
	body := c.Request().Body()
	if ce := c.Get(fiber.HeaderContentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
		return &statusError{status: fiber.StatusUnsupportedMediaType, code: CodeUnsupportedMediaType,
			message: "compressed request bodies are not supported (Content-Encoding must be identity)",
			details: map[string]any{"expected": "identity"}}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	} else if err := checkJSONMediaType(c.Get(fiber.HeaderContentType)); err != nil {
		return err
	}
	return decodeBytes(body, dst)
}

func decodeBytes(body []byte, dst any) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body), decodeOptions)
	if err := json.UnmarshalDecode(dec, dst); err != nil {
		return decodeError(err)
	}
	// json/v2's Decoder reads a stream of values; one body is one value.
	if _, err := dec.ReadToken(); err != io.EOF {
		return bodyError(RuleTrailingData, "must hold a single JSON value, but data follows it")
	}
	if fields := checkText(dst); len(fields) > 0 {
		return platform.Invalid(fields...)
	}
	return nil
}

func checkJSONMediaType(ct string) error {
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	shown := ct
	if shown == "" {
		shown = "none"
	}
	if len(shown) > 100 {
		shown = shown[:100]
	}
	return &statusError{status: fiber.StatusUnsupportedMediaType, code: CodeUnsupportedMediaType,
		message: fmt.Sprintf("the body must be application/json in UTF-8 (Content-Type: %s)", shown),
		details: map[string]any{"expected": "application/json"}}
}

// bodyError is a VALIDATION_ERROR about the body as a whole: its field has
// the empty path.
func bodyError(rule, message string) error {
	return platform.NewError(platform.KindInvalid, platform.CodeValidation, "request body: "+message,
		map[string]any{"fields": []platform.FieldError{{Path: "", Rule: rule, Message: message}}})
}

func fieldError(path, rule, message string) error {
	if path == "" {
		return bodyError(rule, message)
	}
	return platform.InvalidField(path, rule, message)
}

func decodeError(err error) error {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syn):
		path := pointerPath(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return fieldError(path, RuleDuplicateField, "appears more than once")
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			return bodyError(RuleMalformedJSON, "the JSON ends unexpectedly")
		}
		msg := "is not valid JSON"
		if syn.Err != nil {
			msg += ": " + syn.Err.Error()
		}
		return bodyError(RuleMalformedJSON, msg+" at byte "+strconv.FormatInt(syn.ByteOffset, 10))
	case errors.As(err, &sem):
		path := pointerPath(sem.JSONPointer)
		var ne *nullError
		if errors.As(sem.Err, &ne) {
			return fieldError(path, RuleType, "must be "+expected(ne.t)+", not null")
		}
		if errors.Is(sem.Err, json.ErrUnknownName) {
			return fieldError(path, RuleUnknownField, "is not a known field"+caseHint(sem.GoType, sem.JSONPointer.LastToken()))
		}
		if sem.GoType != nil && hasOwnUnmarshal(sem.GoType) && sem.Err != nil {
			// A domain type's own parser knows the rule better than we do.
			return fieldError(path, RuleType, sem.Err.Error())
		}
		return fieldError(path, RuleType, "must be "+expected(sem.GoType)+found(sem))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return bodyError(RuleMalformedJSON, "the JSON ends unexpectedly")
	}
	return bodyError(RuleMalformedJSON, "is not valid JSON")
}

// pointerPath turns json/v2's JSON pointer (/stations/2/label) into the
// path notation of the core's validators (stations[2].label). An all-digit
// token is read as an array index: request bodies have no numeric names.
func pointerPath(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if isIndex(tok) {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func isIndex(tok string) bool {
	if tok == "" {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

var (
	timeType           = reflect.TypeFor[time.Time]()
	unmarshalerType    = reflect.TypeFor[json.Unmarshaler]()
	unmarshalerFromTyp = reflect.TypeFor[json.UnmarshalerFrom]()
)

func hasOwnUnmarshal(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t != timeType && (pt.Implements(unmarshalerType) || pt.Implements(unmarshalerFromTyp))
}

// expected names the JSON a Go type reads, for "must be ..." messages.
func expected(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	if t == timeType {
		return "an RFC 3339 timestamp string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return expected(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	}
	return "a different type"
}

// found says what the client sent instead: its JSON kind, or when the kind
// was right (1.5 for an integer, a malformed timestamp) the value itself.
func found(sem *json.SemanticError) string {
	if got := kindName(sem.JSONKind); got != "" && (sem.GoType == nil || got != kindName(expectedKind(sem.GoType))) {
		return ", not " + got
	}
	if v := sem.JSONValue; len(v) > 0 && len(v) <= 40 {
		return ", not " + string(v)
	}
	return ""
}

func expectedKind(t reflect.Type) jsontext.Kind {
	if t == timeType {
		return '"'
	}
	switch t.Kind() {
	case reflect.Pointer:
		return expectedKind(t.Elem())
	case reflect.String:
		return '"'
	case reflect.Bool:
		return 't'
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return '0'
	case reflect.Struct, reflect.Map:
		return '{'
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return '"'
		}
		return '['
	}
	return 0
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return ""
}

// caseHint helps the commonest mistake with case-sensitive names.
func caseHint(t reflect.Type, name string) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			tag = f.Name
		}
		if tag != name && strings.EqualFold(tag, name) {
			return fmt.Sprintf(" (names are case-sensitive: did you mean %q?)", tag)
		}
	}
	return ""
}

// nullError is raised for a JSON null read into a Go value that cannot say
// "null". json/v2 would silently leave such a value at its zero value.
type nullError struct{ t reflect.Type }

func (e *nullError) Error() string { return "null is not allowed here" }

// rejectNull runs before json/v2's own unmarshaling of every value. It only
// acts on null, and defers (ErrUnsupported) to the default otherwise.
var rejectNull = json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v any) error {
	if dec.PeekKind() != 'n' {
		return errors.ErrUnsupported
	}
	t := reflect.TypeOf(v).Elem() // v is always a non-nil pointer
	switch {
	case t.Kind() == reflect.Pointer, t.Kind() == reflect.Interface, hasOwnUnmarshal(t):
		return errors.ErrUnsupported
	}
	return &nullError{t: t}
})
