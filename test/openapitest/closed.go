package openapitest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// openMark marks, during closedView, a schema that must stay open because it
// is a member of an allOf (its siblings declare the other members).
const openMark = "x-openapitest-open"

// closedView returns the document with every object schema closed: a schema
// of type object that declares properties and says nothing of
// additionalProperties or unevaluatedProperties gets additionalProperties:
// false, so a response member the document does not declare fails
// validation. The published document stays open, as spec 9.2 wants.
//
// allOf compositions cannot be closed member by member (each member would
// refuse the others' members), so each allOf member that is a reference to a
// component schema is replaced by an open copy of that schema, and the
// schema holding the allOf gets unevaluatedProperties: false, which sees the
// members of all of them.
func closedView(document []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, fmt.Errorf("openapitest: the document is not JSON: %w", err)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	original := deepCopy(schemas).(map[string]any)

	var inline func(v any) error
	inline = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			if all, ok := v["allOf"].([]any); ok {
				for i, m := range all {
					member, _ := m.(map[string]any)
					if r, ok := member["$ref"].(string); ok {
						name, found := strings.CutPrefix(r, "#/components/schemas/")
						target, ok := original[name].(map[string]any)
						if !found || !ok {
							return fmt.Errorf("openapitest: allOf member %q must reference a component schema", r)
						}
						member = deepCopy(target).(map[string]any)
						all[i] = member
					}
					if member != nil {
						member[openMark] = true
					}
				}
				if _, ok := v["unevaluatedProperties"]; !ok {
					v["unevaluatedProperties"] = false
				}
			}
			for _, e := range v {
				if err := inline(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range v {
				if err := inline(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := inline(doc); err != nil {
		return nil, err
	}
	closeObjects(doc)
	return json.Marshal(doc)
}

func closeObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if v[openMark] == true {
			delete(v, openMark)
		} else if isObjectSchema(v) {
			_, ap := v["additionalProperties"]
			_, up := v["unevaluatedProperties"]
			if !ap && !up {
				v["additionalProperties"] = false
			}
		}
		for _, e := range v {
			closeObjects(e)
		}
	case []any:
		for _, e := range v {
			closeObjects(e)
		}
	}
}

// isObjectSchema reports a schema of type object with declared properties.
func isObjectSchema(m map[string]any) bool {
	if _, ok := m["properties"].(map[string]any); !ok {
		return false
	}
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, e := range t {
			if e == "object" {
				return true
			}
		}
	}
	return false
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}
