package httpx

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/qms-dev/qms/core/platform"
)

type baseBody struct {
	Count *int              `json:"count"`
	Form  map[string]string `json:"form"`
	Ext   map[string]any    `json:"-"`
}

// embeddedBody is the same body with the member declared the old way, a
// field of an embedded struct.
type embeddedBody struct {
	Count *int              `json:"count"`
	Form  map[string]string `json:"form"`
	embeddedMembers
}

type embeddedMembers struct {
	Code *string `json:"code,omitempty"`
}

// A declared member is decoded exactly as a field of the body would be:
// the same values, and the same error field, rule and message.
func TestExtendedBodyDecodesLikeAField(t *testing.T) {
	body := NewExtendedBody((*baseBody)(nil), []Member{{Name: "code", Type: reflect.TypeFor[*string]()}})
	for _, raw := range []string{
		`{}`, `{"code":"A1","count":2}`, `{"code":null}`, `{"code":7}`, `{"code":{}}`, `{"code":"a","code":"b"}`,
		`{"Code":"a"}`, `{"cod":"a"}`, `{"count":"x","code":1}`, `{"form":{"q":"a"},"code":"Z"}`,
	} {
		var old embeddedBody
		oldErr := decodeBytes([]byte(raw), &old)
		v := reflect.New(body.typ)
		err := decodeBytes([]byte(raw), v.Interface())
		if (err == nil) != (oldErr == nil) {
			t.Fatalf("%s: error %v, the field way %v", raw, err, oldErr)
		}
		if err != nil {
			got, want := fieldsJSON(t, err), fieldsJSON(t, oldErr)
			if got != want && raw != `{"Code":"a"}` {
				t.Errorf("%s: fields %s, the field way %s", raw, got, want)
			}
			continue
		}
		var in baseBody
		ext := body.fill(v, &in)
		code, _ := ext["code"].(*string)
		if !reflect.DeepEqual(in.Count, old.Count) || !reflect.DeepEqual(in.Form, old.Form) || !reflect.DeepEqual(code, old.Code) {
			t.Errorf("%s: decoded %+v %v, the field way %+v", raw, in, ext, old)
		}
	}
}

func fieldsJSON(t *testing.T, err error) string {
	t.Helper()
	e, ok := platform.AsError(err)
	if !ok {
		t.Fatalf("not a domain error: %v", err)
	}
	return fmt.Sprintf("%s %v", e.Code, platform.FieldErrors(e))
}
