package httpx

import (
	"reflect"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Optional is a body member that may be absent but, when present, must hold
// a value: null is a type error. It is the PATCH field that can change but
// never be cleared (a queue's name). With `json:",omitzero"` an absent
// Optional is left out of encoded JSON.
type Optional[T any] struct {
	// Set reports whether the member was present.
	Set   bool
	Value T
}

// Some returns a present Optional.
func Some[T any](v T) Optional[T] { return Optional[T]{Set: true, Value: v} }

// Get returns the value and whether it was present.
func (o Optional[T]) Get() (T, bool) { return o.Value, o.Set }

// IsZero reports absence, for `omitzero`.
func (o Optional[T]) IsZero() bool { return !o.Set }

// UnmarshalJSONFrom reads a present member; null is refused like for any
// non-pointer field.
func (o *Optional[T]) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() == 'n' {
		return &nullError{t: reflect.TypeFor[T]()}
	}
	o.Set = true
	return json.UnmarshalDecode(dec, &o.Value)
}

// MarshalJSONTo writes the value (null when absent and not omitted).
func (o Optional[T]) MarshalJSONTo(enc *jsontext.Encoder) error {
	if !o.Set {
		return enc.WriteToken(jsontext.Null)
	}
	return json.MarshalEncode(enc, o.Value)
}

// Nullable is a body member with three states: absent (Set false), null
// (Set and Null) and a value. It is the PATCH field a client can clear, such
// as a description: absent leaves it, null clears it, a value replaces it.
// With `json:",omitzero"` an absent Nullable is left out of encoded JSON.
type Nullable[T any] struct {
	Set   bool // the member was present
	Null  bool // it was present and null
	Value T    // the value when Set and not Null
}

// NullableOf returns a Nullable holding v.
func NullableOf[T any](v T) Nullable[T] { return Nullable[T]{Set: true, Value: v} }

// NullOf returns a Nullable that is explicitly null.
func NullOf[T any]() Nullable[T] { return Nullable[T]{Set: true, Null: true} }

// Ptr returns the value, or nil when absent or null.
func (n Nullable[T]) Ptr() *T {
	if !n.Set || n.Null {
		return nil
	}
	v := n.Value
	return &v
}

// IsZero reports absence, for `omitzero`.
func (n Nullable[T]) IsZero() bool { return !n.Set }

// UnmarshalJSONFrom reads null or a value. The decoder's options (unknown
// members, duplicates, ...) apply to the value too.
func (n *Nullable[T]) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	n.Set = true
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		var zero T
		n.Null, n.Value = true, zero
		return err
	}
	n.Null = false
	return json.UnmarshalDecode(dec, &n.Value)
}

// MarshalJSONTo writes null when null (or absent and not omitted), else
// the value.
func (n Nullable[T]) MarshalJSONTo(enc *jsontext.Encoder) error {
	if !n.Set || n.Null {
		return enc.WriteToken(jsontext.Null)
	}
	return json.MarshalEncode(enc, n.Value)
}
