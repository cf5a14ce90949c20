package platform

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Validator accumulates the failing fields of one input, so a client sees
// every problem at once. Paths are JSON paths relative to the body
// ("location.lat", "stations[2].label").
type Validator struct {
	fields []FieldError
}

// Fail records a failing field.
func (v *Validator) Fail(path, rule, format string, args ...any) {
	v.fields = append(v.fields, FieldError{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// Err returns the VALIDATION_ERROR, or nil when every field passed.
func (v *Validator) Err() error {
	if len(v.fields) == 0 {
		return nil
	}
	return Invalid(v.fields...)
}

// Fields returns the failures recorded so far.
func (v *Validator) Fields() []FieldError { return v.fields }

// Required fails path when present is false.
func (v *Validator) Required(path string, present bool) bool {
	if !present {
		v.Fail(path, "required", "is required")
	}
	return present
}

// Len checks a string's length in characters, min..max (max < 0: no upper bound).
func (v *Validator) Len(path, s string, min, max int) {
	n := utf8.RuneCountInString(s)
	if n < min {
		if min == 1 {
			v.Fail(path, "min_length", "must not be empty")
		} else {
			v.Fail(path, "min_length", "must be at least %d characters", min)
		}
	}
	if max >= 0 && n > max {
		v.Fail(path, "max_length", "must be at most %d characters", max)
	}
}

// OptLen checks an optional string's length.
func (v *Validator) OptLen(path string, s *string, min, max int) {
	if s != nil {
		v.Len(path, *s, min, max)
	}
}

// Range checks min <= n <= max.
func (v *Validator) Range(path string, n, min, max int) {
	if n < min {
		v.Fail(path, "min", "must be at least %d", min)
	}
	if n > max {
		v.Fail(path, "max", "must be at most %d", max)
	}
}

// OptRange checks an optional integer.
func (v *Validator) OptRange(path string, n *int, min, max int) {
	if n != nil {
		v.Range(path, *n, min, max)
	}
}

// FloatRange checks min <= f <= max.
func (v *Validator) FloatRange(path string, f, min, max float64) {
	if f < min {
		v.Fail(path, "min", "must be at least %v", min)
	}
	if f > max {
		v.Fail(path, "max", "must be at most %v", max)
	}
}

// OneOf checks that s is one of the allowed values.
func (v *Validator) OneOf(path, s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	v.Fail(path, "oneof", "must be one of %s", strings.Join(allowed, ", "))
	return false
}

// MaxItems checks a list's length.
func (v *Validator) MaxItems(path string, n, max int) {
	if n > max {
		v.Fail(path, "max_items", "must have at most %d items", max)
	}
}

// MinItems checks a list's length.
func (v *Validator) MinItems(path string, n, min int) {
	if n < min {
		v.Fail(path, "min_items", "must have at least %d items", min)
	}
}

var (
	clockRE = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	dateRE  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// ClockTime checks a 24-hour HH:MM (00:00 to 23:59).
func (v *Validator) ClockTime(path, s string) bool {
	if !clockRE.MatchString(s) {
		v.Fail(path, "time_hhmm", "must be a 24-hour time HH:MM")
		return false
	}
	return true
}

// Date checks a calendar date YYYY-MM-DD and returns it.
func (v *Validator) Date(path, s string) (time.Time, bool) {
	if dateRE.MatchString(s) {
		if d, err := time.Parse(time.DateOnly, s); err == nil {
			return d, true
		}
	}
	v.Fail(path, "date", "must be a date YYYY-MM-DD")
	return time.Time{}, false
}

// Path joins JSON path segments: Path("a", "b") is "a.b".
func Path(parent, child string) string {
	if parent == "" {
		return child
	}
	return parent + "." + child
}

// Index is the path of a list item: Index("stations", 2) is "stations[2]".
func Index(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }
