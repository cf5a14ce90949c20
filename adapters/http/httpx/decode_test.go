package httpx

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

type station struct {
	Label string `json:"label"`
	Desk  int    `json:"desk"`
}

type createQueue struct {
	Name     string    `json:"name"`
	Capacity *int      `json:"capacity"`
	Tags     []string  `json:"tags"`
	Stations []station `json:"stations"`
	Location struct {
		Lat float64 `json:"lat"`
		Lng float64 `json:"lng"`
	} `json:"location"`
	OpensAt time.Time         `json:"opensAt"`
	Meta    map[string]any    `json:"meta"`
	Note    Nullable[string]  `json:"note"`
	Title   Optional[string]  `json:"title"`
	Where   Nullable[station] `json:"where"`
}

func TestDecodeRules(t *testing.T) {
	cases := []struct {
		name, body string
		path, rule string
		msg        string // substring of the field message
	}{
		{"unknown top", `{"name":"a","color":"red"}`, "color", RuleUnknownField, "not a known field"},
		{"unknown at depth", `{"stations":[{"label":"a"},{"label":"b"},{"label":"c","extra":1}]}`, "stations[2].extra", RuleUnknownField, ""},
		{"unknown in object", `{"location":{"lat":1,"alt":2}}`, "location.alt", RuleUnknownField, ""},
		{"unknown inside nullable", `{"where":{"label":"a","x":1}}`, "where.x", RuleUnknownField, ""},
		{"case mismatch", `{"Name":"a"}`, "Name", RuleUnknownField, `did you mean "name"`},
		{"duplicate", `{"name":"a","name":"b"}`, "name", RuleDuplicateField, "more than once"},
		{"duplicate at depth", `{"stations":[{},{"label":"a","label":"b"}]}`, "stations[1].label", RuleDuplicateField, ""},
		{"trailing object", `{}{}`, "", RuleTrailingData, "data follows"},
		{"trailing garbage", `{"name":"a"} x`, "", RuleTrailingData, ""},
		{"wrong type string", `{"name":1}`, "name", RuleType, "must be a string, not a number"},
		{"wrong type int", `{"stations":[{"desk":"1"}]}`, "stations[0].desk", RuleType, "must be an integer, not a string"},
		{"fraction for int", `{"stations":[{"desk":1.5}]}`, "stations[0].desk", RuleType, "must be an integer"},
		{"wrong type float", `{"location":{"lat":"x"}}`, "location.lat", RuleType, "must be a number"},
		{"wrong type array", `{"tags":"a"}`, "tags", RuleType, "must be an array"},
		{"wrong type time", `{"opensAt":"tomorrow"}`, "opensAt", RuleType, "RFC 3339"},
		{"null string", `{"name":null}`, "name", RuleType, "must be a string, not null"},
		{"null object", `{"location":null}`, "location", RuleType, "must be an object, not null"},
		{"null slice", `{"tags":null}`, "tags", RuleType, "must be an array, not null"},
		{"null in array", `{"tags":["a",null]}`, "tags[1]", RuleType, "not null"},
		{"null optional", `{"title":null}`, "title", RuleType, "must be a string, not null"},
		{"null body", `null`, "", RuleType, "must be an object, not null"},
		{"array body", `[1]`, "", RuleType, "must be an object, not an array"},
		{"malformed", `{"name" "a"}`, "", RuleMalformedJSON, "not valid JSON"},
		{"truncated", `{"name":`, "", RuleMalformedJSON, "ends unexpectedly"},
		{"invalid utf8", "{\"name\":\"\xff\"}", "", RuleMalformedJSON, "UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var dst createQueue
			err := decodeBytes([]byte(tc.body), &dst)
			pe, ok := platform.AsError(err)
			if !ok || pe.Code != platform.CodeValidation || pe.Kind != platform.KindInvalid {
				t.Fatalf("err = %v, want VALIDATION_ERROR", err)
			}
			fields := platform.FieldErrors(pe)
			if len(fields) != 1 {
				t.Fatalf("fields = %v", pe.Details)
			}
			f := fields[0]
			if f.Path != tc.path || f.Rule != tc.rule || !strings.Contains(f.Message, tc.msg) {
				t.Errorf("field = %+v, want path %q rule %q message ~%q", f, tc.path, tc.rule, tc.msg)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	var dst createQueue
	body := `{"name":"Front desk","capacity":null,"tags":[],"stations":[{"label":"A","desk":1}],
		"location":{"lat":-34.6,"lng":-58.4},"opensAt":"2026-01-02T09:00:00Z","meta":{"k":null},"note":null,"title":"T",
		"where":{"label":"x"}}`
	if err := decodeBytes([]byte(body), &dst); err != nil {
		t.Fatal(err)
	}
	if dst.Name != "Front desk" || dst.Capacity != nil || dst.Stations[0].Desk != 1 || dst.Location.Lat != -34.6 ||
		!dst.Note.Set || !dst.Note.Null || dst.Title != Some("T") || dst.Where.Value.Label != "x" || dst.Meta["k"] != nil {
		t.Errorf("decoded %+v", dst)
	}
}

func TestNullableAndOptional(t *testing.T) {
	type patch struct {
		Note  Nullable[string] `json:"note,omitzero"`
		Size  Nullable[int]    `json:"size,omitzero"`
		Title Optional[string] `json:"title,omitzero"`
	}
	var p patch
	if err := decodeBytes([]byte(`{"note":null,"size":3}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Note != NullOf[string]() || p.Size != NullableOf(3) || p.Title.Set {
		t.Errorf("decoded %+v", p)
	}
	if v, ok := p.Title.Get(); ok || v != "" {
		t.Errorf("absent Optional Get = %q %v", v, ok)
	}
	if p.Note.Ptr() != nil || *p.Size.Ptr() != 3 {
		t.Errorf("Ptr wrong")
	}
	for _, tc := range []struct {
		in   patch
		want string
	}{
		{patch{}, `{}`},
		{patch{Note: NullOf[string](), Size: NullableOf(0), Title: Some("")}, `{"note":null,"size":0,"title":""}`},
	} {
		b, err := encodeJSON(tc.in)
		if err != nil || string(b) != tc.want {
			t.Errorf("encode %+v = %s %v, want %s", tc.in, b, err, tc.want)
		}
	}
	// A wrong type inside a Nullable is reported at the member's path.
	err := decodeBytes([]byte(`{"size":"3"}`), &p)
	if pe, _ := platform.AsError(err); pe == nil || !strings.Contains(pe.Message, "size: must be an integer") {
		t.Errorf("err = %v", err)
	}
}

func TestDecodeHTTP(t *testing.T) {
	app, _ := newTestApp(t, AppConfig{})
	app.Post("/q", func(c *fiber.Ctx) error {
		var in struct {
			Name string `json:"name"`
		}
		if err := Decode(c, &in); err != nil {
			return err
		}
		return Created(c, in)
	})
	cases := []struct {
		body, ct string
		status   int
		out      string
	}{
		{`{"name":"a"}`, "application/json", 201, `{"name":"a"}`},
		{`{"name":"a"}`, "application/json; charset=UTF-8", 201, `{"name":"a"}`},
		{`{"name":"a"}`, "application/merge-patch+json", 201, `{"name":"a"}`},
		{"", "", 201, `{"name":""}`},
		{"  \n", "text/plain", 201, `{"name":""}`},
		{`{"name":"a"}`, "", 415, "UNSUPPORTED_MEDIA_TYPE"},
		{`{"name":"a"}`, "text/plain", 415, "UNSUPPORTED_MEDIA_TYPE"},
		{`{"name":"a"}`, "application/json; charset=latin1", 415, "UNSUPPORTED_MEDIA_TYPE"},
		{`{"name":"a","x":1}`, "application/json", 400, "VALIDATION_ERROR"},
		{"\x1f\x8b\x08\x00", "application/json", 415, "UNSUPPORTED_MEDIA_TYPE"}, // with Content-Encoding: gzip below
	}
	for _, tc := range cases {
		var h []string
		if tc.ct != "" {
			h = []string{"Content-Type", tc.ct}
		}
		if strings.HasPrefix(tc.body, "\x1f") {
			h = append(h, "Content-Encoding", "gzip")
		}
		r := do(t, app, "POST", "/q", tc.body, h...)
		if tc.status >= 400 {
			expectError(t, r, tc.status, tc.out)
			continue
		}
		if r.status != tc.status || string(r.body) != tc.out {
			t.Errorf("%q %q: %d %s", tc.body, tc.ct, r.status, r.body)
		}
	}
}

func TestPointerPath(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"/name":              "name",
		"/stations/2/label":  "stations[2].label",
		"/0/a":               "[0].a",
		"/a/0/1/b":           "a[0][1].b",
		"/schedule/weekly/0": "schedule.weekly[0]",
	} {
		var p = jsonPointer(in)
		if got := pointerPath(p); got != want {
			t.Errorf("pointerPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFiberBodyParserIsStrict(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	err := decodeJSONStrict([]byte(`{"Name":"a"}`), &v)
	var se *json.SemanticError
	if !errors.As(err, &se) {
		t.Errorf("BodyParser decoder accepted a case-mismatched name: %v", err)
	}
}
