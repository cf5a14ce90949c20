package httpx

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Member is a body member another module declares (the access-codes
// module's accessCode in the turn create body): its JSON name and the Go
// type it decodes into.
type Member struct {
	Name string
	Type reflect.Type
}

// ExtendedBody decodes a body struct together with members other modules
// declare, as one strict body: the declared members are checked like the
// struct's own (types, null, duplicates, unknown names with the case hint),
// so a module adds a member to another's body without editing its struct.
type ExtendedBody struct {
	typ     reflect.Type
	fields  [][]int // the base struct's field index of each leading field
	members []Member
}

// NewExtendedBody prepares the decoding of base (a pointer to a struct
// type, e.g. (*turns.CreateInput)(nil)) with members. It panics on a
// member that clashes with a field of base: a wiring mistake.
func NewExtendedBody(base any, members []Member) *ExtendedBody {
	t := reflect.TypeOf(base).Elem()
	b := &ExtendedBody{members: members}
	var fields []reflect.StructField
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		names[name] = true
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
		b.fields = append(b.fields, f.Index)
	}
	for i, m := range members {
		if names[m.Name] {
			panic(fmt.Sprintf("httpx: body member %q is already a field of %s", m.Name, t))
		}
		names[m.Name] = true
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("Member%d", i), Type: m.Type,
			Tag: reflect.StructTag(fmt.Sprintf(`json:%q`, m.Name))})
	}
	b.typ = reflect.StructOf(fields)
	return b
}

// Decode reads the request body (as Decode does) into dst, a pointer to the
// base struct, and returns the declared members the body carried, by name
// (absent and null ones left out).
func (b *ExtendedBody) Decode(c *fiber.Ctx, dst any) (map[string]any, error) {
	v := reflect.New(b.typ)
	if err := Decode(c, v.Interface()); err != nil {
		return nil, err
	}
	return b.fill(v, dst), nil
}

// fill copies a decoded body into dst and returns the members it carried.
func (b *ExtendedBody) fill(v reflect.Value, dst any) map[string]any {
	out, d := v.Elem(), reflect.ValueOf(dst).Elem()
	for i, idx := range b.fields {
		d.FieldByIndex(idx).Set(out.Field(i))
	}
	got := map[string]any{}
	for i, m := range b.members {
		if f := out.Field(len(b.fields) + i); !f.IsZero() {
			got[m.Name] = f.Interface()
		}
	}
	return got
}
