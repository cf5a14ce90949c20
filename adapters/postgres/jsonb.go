package postgres

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// jsonb is the JSON text of a jsonb column. bun v1.3.0 writes JSON into
// its SQL through AppendJSON, which rewrites every backslash followed by
// "u0000" into `\\u0000`: a \u0000 escape is silently stored as the six
// characters "\u0000", and an escaped backslash before "u0000" (the
// string `\u0000` itself) becomes an invalid escape that PostgreSQL
// refuses (SQLSTATE 22P05, a 500). A jsonb column whose Go type is a
// driver.Valuer skips AppendJSON: jsonb's value is its JSON as a string,
// which bun writes as a plain string literal (quotes doubled, backslashes
// as they are, standard_conforming_strings on), so what was encoded is
// what PostgreSQL parses and what a later read returns.
type jsonb []byte

var _ driver.Valuer = jsonb(nil)

// Value is the JSON text (NULL for nil). JSON text never holds a raw NUL
// (encoders escape control characters), and the HTTP layer refuses the
// source of a \u0000 escape, so PostgreSQL sees valid jsonb input.
func (j jsonb) Value() (driver.Value, error) {
	if j == nil {
		return nil, nil
	}
	return string(j), nil
}

// Scan reads the column's text.
func (j *jsonb) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = append(jsonb(nil), v...)
	case string:
		*j = jsonb(v)
	default:
		return fmt.Errorf("postgres: jsonb column: cannot scan %T", src)
	}
	return nil
}

// jsonbStrings is a jsonb column holding a string map (form answers),
// written through jsonb for the same reason.
type jsonbStrings map[string]string

var _ driver.Valuer = jsonbStrings(nil)

// Value is the map's JSON text (NULL for a nil map).
func (m jsonbStrings) Value() (driver.Value, error) {
	if m == nil {
		return nil, nil
	}
	doc, err := json.Marshal(map[string]string(m))
	if err != nil {
		return nil, fmt.Errorf("postgres: encode a jsonb string map: %w", err)
	}
	return string(doc), nil
}

// Scan reads the column's JSON into the map.
func (m *jsonbStrings) Scan(src any) error {
	var doc jsonb
	if err := doc.Scan(src); err != nil {
		return err
	}
	if doc == nil {
		*m = nil
		return nil
	}
	var out map[string]string
	if err := json.Unmarshal(doc, &out); err != nil {
		return fmt.Errorf("postgres: decode a jsonb string map: %w", err)
	}
	*m = out
	return nil
}
