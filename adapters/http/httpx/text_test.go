package httpx

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// textBody has one field of each text kind, nested the ways bodies nest.
type textBody struct {
	Name     *string                `json:"name" text:"name"`
	Notes    *string                `json:"notes" text:"free"`
	Phone    *string                `json:"phone"`
	Answers  map[string]string      `json:"answers" text:"free"`
	Props    map[string]any         `json:"props" text:"free"`
	Stations []textStation          `json:"stations"`
	Title    platform.Patch[string] `json:"title" text:"name"`
	Nick     Optional[string]       `json:"nick" text:"name"`
	Options  []queues.Option        `json:"options"`
	textInline
}

type textStation struct {
	Label *string `json:"label" text:"name"`
}

type textInline struct {
	Code *string `json:"code"`
}

// TestDecodeTextRule: every string of a body, at any depth, is held to the
// rule of its field, and the failure names the field and the rule.
func TestDecodeTextRule(t *testing.T) {
	for _, c := range []struct {
		body, path, rule string
	}{
		{`{"name":"a\u0000b"}`, "name", platform.RuleControlCharacter},
		{`{"phone":"555\u0000"}`, "phone", platform.RuleControlCharacter},
		{`{"phone":"555\t1"}`, "phone", platform.RuleControlCharacter},
		{`{"code":"x\u001b[31m"}`, "code", platform.RuleControlCharacter},
		{`{"code":"x\u0085"}`, "code", platform.RuleControlCharacter},
		{`{"notes":"ok\nfine\u0000"}`, "notes", platform.RuleControlCharacter},
		{`{"notes":"bell\u0007"}`, "notes", platform.RuleControlCharacter},
		{`{"name":"   "}`, "name", platform.RuleNoVisibleCharacter},
		{`{"name":"\u200d\u00a0\u3000"}`, "name", platform.RuleNoVisibleCharacter},
		{`{"name":"Ann\u202egnp.exe"}`, "name", platform.RuleBidiControl},
		{`{"name":"Ann\u2067x"}`, "name", platform.RuleBidiControl},
		{`{"name":"A\u200bnn"}`, "name", platform.RuleInvisibleCharacter},
		{`{"name":"\ufeffAnn"}`, "name", platform.RuleInvisibleCharacter},
		{`{"answers":{"plate":"a\u0000"}}`, "answers.plate", platform.RuleControlCharacter},
		{`{"answers":{"pl\u0000ate":"a"}}`, "answers", platform.RuleControlCharacter},
		{`{"props":{"a":[1,{"b":"\u0000"}]}}`, "props.a[1].b", platform.RuleControlCharacter},
		{`{"stations":[{"label":"ok"},{"label":"\u202a"}]}`, "stations[1].label", platform.RuleBidiControl},
		{`{"title":" "}`, "title", platform.RuleNoVisibleCharacter},
		{`{"nick":"\u0000"}`, "nick", platform.RuleControlCharacter},
		{`{"options":["Yes","N\u0000o"]}`, "options[1].label", platform.RuleControlCharacter},
		{`{"options":[{"label":"\u202eNo"}]}`, "options[0].label", platform.RuleBidiControl},
	} {
		var dst textBody
		f := ruleOf(t, c.body, decodeBytes([]byte(c.body), &dst))
		if f.Path != c.path || f.Rule != c.rule {
			t.Errorf("%s: %s/%s (%s), want %s/%s", c.body, f.Path, f.Rule, f.Message, c.path, c.rule)
		}
	}
	for _, ok := range []string{
		`{"name":"Zoë 👩\u200d👩\u200d👧 مرحبا\u200cها"}`, `{"name":"\u200fשלום"}`, `{"notes":"line 1\r\n\tline 2"}`,
		`{"answers":{"plate":"a\nb"}}`, `{"props":{"k":"x\ty","n":null,"b":true,"f":1.5}}`,
		`{"name":"-"}`, `{"name":"€"}`, `{"title":null}`, `{"phone":"+34 600 000 000"}`,
	} {
		var dst textBody
		if err := decodeBytes([]byte(ok), &dst); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}

func ruleOf(t *testing.T, body string, err error) platform.FieldError {
	t.Helper()
	pe, ok := platform.AsError(err)
	if !ok || pe.Code != platform.CodeValidation {
		t.Fatalf("%s: want VALIDATION_ERROR, got %v", body, err)
	}
	fields := platform.FieldErrors(pe)
	return fields[0]
}

// TestQueryAndPathText: query parameters (decoded) and path parameters
// (raw bytes in the request line) are held to the plain rule, named.
func TestQueryAndPathText(t *testing.T) {
	app := NewApp(AppConfig{})
	app.Get("/queues/:queueId/stations", func(c *fiber.Ctx) error { return c.SendString("ok") })
	for _, c := range []struct{ url, path, rule string }{
		{"/queues/q1/stations?entityId=%00", "entityId", platform.RuleControlCharacter},
		{"/queues/q1/stations?status=%ff", "status", platform.RuleInvalidUTF8},
		{"/queues/q1/stations?a=1&limit=x%0Ay", "limit", platform.RuleControlCharacter},
	} {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, c.url, nil))
		if err != nil {
			t.Fatal(err)
		}
		var env errorEnvelope
		decodeResponse(t, resp, &env)
		fields := env.fields()
		if resp.StatusCode != 400 || len(fields) != 1 || fields[0].Path != c.path || fields[0].Rule != c.rule {
			t.Errorf("%s: %d %+v", c.url, resp.StatusCode, env.Error)
		}
	}
	if resp, _ := app.Test(httptest.NewRequest(http.MethodGet, "/queues/q%00/stations?x=%C3%A9", nil)); resp.StatusCode != 200 {
		t.Errorf("percent-encoded path and a UTF-8 query: %d", resp.StatusCode)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() { _ = app.Shutdown() }()
	for seg, rule := range map[string]string{"q\x01x": platform.RuleControlCharacter, "q\xffx": platform.RuleInvalidUTF8} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("GET /queues/" + seg + "/stations HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		var env errorEnvelope
		decodeResponse(t, resp, &env)
		conn.Close()
		if resp.StatusCode == 200 {
			t.Errorf("%q reached the handler", seg)
			continue
		}
		if rule == platform.RuleControlCharacter {
			// fasthttp refuses a control byte in the request line (RFC 9112 3.2):
			// a malformed request, answered in the envelope before any route.
			if resp.StatusCode != 400 || env.Error.Code != "VALIDATION_ERROR" {
				t.Errorf("%q: %d %+v", seg, resp.StatusCode, env.Error)
			}
			continue
		}
		if fields := env.fields(); resp.StatusCode != 400 || len(fields) != 1 ||
			fields[0].Path != "queueId" || fields[0].Rule != rule {
			t.Errorf("%q: %d %+v", seg, resp.StatusCode, env.Error)
		}
	}
}

func decodeResponse(t *testing.T, resp *http.Response, out any) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// TestNegativeZeroInFreeJSON: -0 inside free JSON reads as 0, as
// PostgreSQL's jsonb would store it, so a 201 and a later read agree.
func TestNegativeZeroInFreeJSON(t *testing.T) {
	var dst textBody
	if err := decodeBytes([]byte(`{"props":{"a":-0,"b":[-0.0,{"c":-0e5}],"d":-1.5}}`), &dst); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(dst.Props, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":0,"b":[0,{"c":0}],"d":-1.5}`; string(out) != want {
		t.Errorf("decoded %s, want %s", out, want)
	}
}

// TestHostRequiredOnHTTP11: an HTTP/1.1 request without a Host header is
// malformed (RFC 9112 3.2) and answered in the spec's envelope before any
// route; HTTP/1.0, which has no Host, still reaches its route
// (docs/decisions.md, "fasthttp 1.79 under fiber 2.52").
func TestHostRequiredOnHTTP11(t *testing.T) {
	app := NewApp(AppConfig{})
	app.Get("/x", func(c *fiber.Ctx) error { return c.SendString("ok") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() { _ = app.Shutdown() }()
	for _, c := range []struct {
		raw  string
		want int
	}{
		{"GET /x HTTP/1.1\r\nConnection: close\r\n\r\n", 400},
		{"GET /x HTTP/1.1\r\nHost: qms.test\r\nConnection: close\r\n\r\n", 200},
		{"GET /x HTTP/1.0\r\n\r\n", 200},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte(c.raw))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.want {
			t.Errorf("%q: %d, want %d", c.raw, resp.StatusCode, c.want)
		}
		if c.want == 400 {
			var env errorEnvelope
			decodeResponse(t, resp, &env)
			if env.Error.Code != "VALIDATION_ERROR" || env.Error.RequestID == "" {
				t.Errorf("%q: %+v", c.raw, env.Error)
			}
		}
		resp.Body.Close()
		conn.Close()
	}
}
