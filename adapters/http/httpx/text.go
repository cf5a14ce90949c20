package httpx

import (
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

// TextTag is the struct tag that gives a string field its text kind:
// `text:"name"` (names and labels), `text:"free"` (notes, descriptions,
// answers). Untagged strings are plain. A tag on a map, slice, pointer or
// `any` field applies to every string inside it; map keys are always
// plain.
const TextTag = "text"

// checkText applies the text rule of platform.CheckText to every string
// in v (the decoded body): struct fields by their tag, map keys, slice
// items and the strings inside `any` values. It returns every failing
// field, with its JSON path.
func checkText(v any) []platform.FieldError {
	var w textWalker
	w.walk(reflect.ValueOf(v), "", platform.TextPlain, 0)
	return w.fields
}

type textWalker struct {
	fields []platform.FieldError
}

// maxTextDepth bounds the walk; json/v2 refuses bodies nested deeper
// (10000) long before, but the walk must not trust that.
const maxTextDepth = 10_000

var (
	patchFieldType = reflect.TypeFor[platform.PatchField]()
)

func (w *textWalker) check(path, s string, k platform.TextKind) {
	if rule, msg := platform.CheckText(s, k); rule != "" {
		w.fields = append(w.fields, platform.FieldError{Path: path, Rule: rule, Message: msg})
	}
}

func (w *textWalker) walk(v reflect.Value, path string, k platform.TextKind, depth int) {
	if !v.IsValid() || depth > maxTextDepth {
		return
	}
	switch v.Kind() {
	case reflect.String:
		w.check(path, v.String(), k)
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			w.walk(v.Elem(), path, k, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes (base64 in JSON), not text
		}
		for i := 0; i < v.Len(); i++ {
			w.walk(v.Index(i), platform.Index(path, i), k, depth+1)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			key := iter.Key()
			name := ""
			if key.Kind() == reflect.String {
				name = key.String()
				if rule, msg := platform.CheckText(name, platform.TextPlain); rule != "" {
					// The key cannot name the path: it is what is wrong.
					w.fields = append(w.fields, platform.FieldError{Path: path, Rule: rule, Message: "a key " + msg})
					continue
				}
			}
			w.walk(iter.Value(), platform.Path(path, name), k, depth+1)
		}
	case reflect.Struct:
		w.walkStruct(v, path, k, depth)
	}
}

func (w *textWalker) walkStruct(v reflect.Value, path string, k platform.TextKind, depth int) {
	t := v.Type()
	if v.CanAddr() && v.CanInterface() && reflect.PointerTo(t).Implements(patchFieldType) {
		// platform.Patch: its value, under the field's own path and kind.
		w.walk(reflect.ValueOf(v.Addr().Interface().(platform.PatchField).ValueTarget()), path, k, depth+1)
		return
	}
	if t == timeType {
		return
	}
	if _, wrapper := t.FieldByName("Value"); wrapper && hasOwnUnmarshal(t) {
		// A wrapper with its own decoding (Optional, Nullable): its
		// exported Value holds what was sent.
		w.walk(v.FieldByName("Value"), path, k, depth+1)
		return
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		fk := textKind(sf.Tag.Get(TextTag), k)
		if sf.Anonymous && name == "" {
			w.walk(v.Field(i), path, fk, depth+1) // inlined, like json/v2 does
			continue
		}
		if name == "" {
			name = sf.Name
		}
		w.walk(v.Field(i), platform.Path(path, name), fk, depth+1)
	}
}

// textKind reads a `text` tag; an untagged field keeps the kind of what
// holds it (plain at the top).
func textKind(tag string, inherited platform.TextKind) platform.TextKind {
	switch tag {
	case "name":
		return platform.TextName
	case "free":
		return platform.TextFree
	case "plain":
		return platform.TextPlain
	}
	return inherited
}

// CheckParam checks a query or path parameter's value as plain text and
// returns the VALIDATION_ERROR naming it, or nil.
func CheckParam(name, value string) error {
	if rule, msg := platform.CheckText(value, platform.TextPlain); rule != "" {
		return platform.InvalidField(name, rule, msg)
	}
	return nil
}

// CheckRequestText is the middleware that holds the query parameters
// (names and values, as decoded) and the path to the plain text rule, so
// no handler or repository ever sees a control character or invalid
// UTF-8 there: 400 VALIDATION_ERROR naming the parameter. Path
// parameters are not percent-decoded (fiber's default), so only raw bytes
// in the request line can carry one; the failing segment is named after
// the parameter of the route it would match ("path" when none does).
//
// NewApp mounts it for every path but /api/; [Guard] runs it for /api/
// once the request has spent its budget, so the 400 carries the rate
// headers like every other /api/v1 answer.
func CheckRequestText() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if strings.HasPrefix(c.Path(), "/api/") {
			return c.Next()
		}
		if err := checkRequestText(c); err != nil {
			return err
		}
		return c.Next()
	}
}

// checkRequestText holds the path and the query parameters to the plain
// text rule.
func checkRequestText(c *fiber.Ctx) error {
	if p := c.Path(); !plainText(p) {
		return CheckParam(pathParamAt(c, p), p)
	}
	for k, v := range c.Context().QueryArgs().All() {
		name := string(k)
		if rule, msg := platform.CheckText(name, platform.TextPlain); rule != "" {
			return platform.InvalidField("query", rule, "a parameter's name "+msg)
		}
		if name == "cursor" {
			// Opaque and signed: ParsePage refuses anything it did not
			// sign as 400 INVALID_CURSOR, before it reaches storage.
			continue
		}
		if err := CheckParam(name, string(v)); err != nil {
			return err
		}
	}
	return nil
}

func plainText(s string) bool {
	rule, _ := platform.CheckText(s, platform.TextPlain)
	return rule == ""
}

// pathParamAt names the parameter whose segment of path breaks the rule,
// from the routes of the request's method: the first route whose literal
// segments match and that has a parameter there.
func pathParamAt(c *fiber.Ctx, path string) string {
	segs := strings.Split(path, "/")
	bad := -1
	for i, s := range segs {
		if !plainText(s) {
			bad = i
			break
		}
	}
	for _, r := range c.App().GetRoutes(true) {
		if r.Method != c.Method() {
			continue
		}
		tmpl := strings.Split(r.Path, "/")
		if len(tmpl) != len(segs) || bad < 0 || !strings.HasPrefix(tmpl[bad], ":") {
			continue
		}
		match := true
		for i, t := range tmpl {
			if i != bad && !strings.HasPrefix(t, ":") && t != segs[i] {
				match = false
				break
			}
		}
		if match {
			return strings.TrimSuffix(strings.TrimPrefix(tmpl[bad], ":"), "?")
		}
	}
	return "path"
}

// TextField is a string field of a body type and the text kind the
// decoder holds it to.
type TextField struct {
	Path string // JSON path; [] for list items, {} for map values, {key} for map keys
	Kind platform.TextKind
}

// TextFields lists the string fields of the body type of v (a value or a
// pointer) with the kind of each, in declaration order: the table of
// which rule applies where (docs/strings.md is checked against it).
func TextFields(v any) []TextField {
	var out []TextField
	textFieldsOf(reflect.TypeOf(v), "", platform.TextPlain, &out, 0)
	return out
}

func textFieldsOf(t reflect.Type, path string, k platform.TextKind, out *[]TextField, depth int) {
	if depth > 20 {
		return // recursive types: bodies have none, but do not loop
	}
	switch t.Kind() {
	case reflect.String:
		*out = append(*out, TextField{Path: path, Kind: k})
	case reflect.Interface:
		*out = append(*out, TextField{Path: path + " (any JSON: its strings)", Kind: k})
		*out = append(*out, TextField{Path: path + " (any JSON: its object keys)", Kind: platform.TextPlain})
	case reflect.Pointer:
		textFieldsOf(t.Elem(), path, k, out, depth+1)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 {
			textFieldsOf(t.Elem(), path+"[]", k, out, depth+1)
		}
	case reflect.Map:
		*out = append(*out, TextField{Path: path + "{key}", Kind: platform.TextPlain})
		textFieldsOf(t.Elem(), path+"{}", k, out, depth+1)
	case reflect.Struct:
		if t == timeType {
			return
		}
		if f, wrapper := t.FieldByName("Value"); wrapper && (reflect.PointerTo(t).Implements(patchFieldType) || hasOwnUnmarshal(t)) {
			textFieldsOf(f.Type, path, k, out, depth+1)
			return
		}
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() && !sf.Anonymous {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			fk := textKind(sf.Tag.Get(TextTag), k)
			if sf.Anonymous && name == "" {
				textFieldsOf(sf.Type, path, fk, out, depth+1)
				continue
			}
			if name == "" {
				name = sf.Name
			}
			textFieldsOf(sf.Type, platform.Path(path, name), fk, out, depth+1)
		}
	}
}
