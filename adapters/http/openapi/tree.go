package openapi

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"
)

// The document is handled as a tree of plain values: *object (a mapping
// that keeps its keys in source order, so the served JSON reads like the
// YAML it came from), []any, string, int64, float64, bool and nil.

// object is an ordered JSON object. line remembers where each key was
// written, so merge conflicts can name file and line.
type object struct {
	keys []string
	vals map[string]any
	line map[string]int
}

func newObject() *object {
	return &object{vals: map[string]any{}, line: map[string]int{}}
}

func (o *object) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[k]
	return v, ok
}

// obj returns the member k when it is an object.
func (o *object) obj(k string) *object {
	v, _ := o.get(k)
	m, _ := v.(*object)
	return m
}

func (o *object) str(k string) string {
	v, _ := o.get(k)
	s, _ := v.(string)
	return s
}

func (o *object) has(k string) bool {
	_, ok := o.get(k)
	return ok
}

// set adds k at the end, or replaces its value in place.
func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// child returns the object member k, creating it when absent.
func (o *object) child(k string) (*object, error) {
	v, ok := o.get(k)
	if !ok {
		c := newObject()
		o.set(k, c)
		return c, nil
	}
	c, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%q must be an object", k)
	}
	return c, nil
}

// fromYAML converts a parsed YAML node into the tree.
func fromYAML(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return newObject(), nil
		}
		return fromYAML(n.Content[0])
	case yaml.AliasNode:
		return fromYAML(n.Alias)
	case yaml.MappingNode:
		o := newObject()
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: keys must be scalars", k.Line)
			}
			if k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported; write the members out", k.Line)
			}
			if o.has(k.Value) {
				return nil, fmt.Errorf("line %d: key %q repeated", k.Line, k.Value)
			}
			if n.Style&yaml.FlowStyle != 0 && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" && v.Value == "" {
				// { description: A, B } is { description: A, "B": null }:
				// the comma ends the value and the rest becomes a member.
				return nil, fmt.Errorf("line %d: %q has no value: a comma ends an unquoted value in { ... }; quote the value before it", k.Line, k.Value)
			}
			val, err := fromYAML(v)
			if err != nil {
				return nil, err
			}
			o.set(k.Value, val)
			o.line[k.Value] = k.Line
		}
		return o, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := fromYAML(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return b, nil
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return i, nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
			}
			return f, nil
		default:
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// encodeJSON writes the tree as compact JSON, keys in their order.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	if err := writeValue(enc, v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

func writeValue(enc *jsontext.Encoder, v any) error {
	switch v := v.(type) {
	case *object:
		if err := enc.WriteToken(jsontext.BeginObject); err != nil {
			return err
		}
		for _, k := range v.keys {
			if err := enc.WriteToken(jsontext.String(k)); err != nil {
				return err
			}
			if err := writeValue(enc, v.vals[k]); err != nil {
				return err
			}
		}
		return enc.WriteToken(jsontext.EndObject)
	case []any:
		if err := enc.WriteToken(jsontext.BeginArray); err != nil {
			return err
		}
		for _, e := range v {
			if err := writeValue(enc, e); err != nil {
				return err
			}
		}
		return enc.WriteToken(jsontext.EndArray)
	case string:
		return enc.WriteToken(jsontext.String(v))
	case int64:
		return enc.WriteToken(jsontext.Int(v))
	case float64:
		return enc.WriteToken(jsontext.Float(v))
	case bool:
		return enc.WriteToken(jsontext.Bool(v))
	case nil:
		return enc.WriteToken(jsontext.Null)
	}
	return fmt.Errorf("openapi: unexpected %T in the document tree", v)
}

// equal reports whether two trees hold the same values (key order aside).
func equal(a, b any) bool {
	switch a := a.(type) {
	case *object:
		b, ok := b.(*object)
		if !ok || len(a.keys) != len(b.keys) {
			return false
		}
		for _, k := range a.keys {
			bv, ok := b.vals[k]
			if !ok || !equal(a.vals[k], bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equal(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// codeRank orders response keys: status codes ascending, then ranges
// (2XX), then default.
func codeRank(k string) int {
	if n, err := strconv.Atoi(k); err == nil {
		return n * 10
	}
	if len(k) == 3 && k[1:] == "XX" && k[0] >= '1' && k[0] <= '5' {
		return int(k[0]-'0')*1000 + 999
	}
	return math.MaxInt32
}
