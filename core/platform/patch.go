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
