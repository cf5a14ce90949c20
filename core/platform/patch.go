package platform

import (
	"bytes"
	"encoding/json"
)

// Patch is a field of a partial update (PATCH): absent (Set false), null
// (Set and Null: clear the field) or a value.
type Patch[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// UnmarshalJSON records that the field was present, and whether it was null.
func (p *Patch[T]) UnmarshalJSON(b []byte) error {
	p.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		p.Null = true
		return nil
	}
	return json.Unmarshal(b, &p.Value)
}

// Ptr returns a pointer to v, for optional fields.
func Ptr[T any](v T) *T { return &v }

// Deref returns *p, or def when p is nil.
func Deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// PatchField is what a strict JSON decoder needs of a Patch: to record
// presence and null itself, and to decode a value into the target with its
// own (strict) rules rather than through UnmarshalJSON.
type PatchField interface {
	MarkPresent(null bool)
	ValueTarget() any
}

// MarkPresent records that the field was present, and whether it was null.
func (p *Patch[T]) MarkPresent(null bool) { p.Set, p.Null = true, null }

// ValueTarget is where a present, non-null value decodes to.
func (p *Patch[T]) ValueTarget() any { return &p.Value }

// StringShorthand is implemented by types whose JSON form is an object or,
// as a shorthand, a bare string (a question option "Yes" for {"label":
// "Yes"}). A strict decoder calls FromString for a string and decodes an
// object into ObjectTarget, which has no methods of its own.
type StringShorthand interface {
	FromString(s string)
	ObjectTarget() any
}
