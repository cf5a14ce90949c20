package turnhttp

import (
	"bytes"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/turns"
)

// texts are strings that test the quoting: escapes, HTML and JS
// specials (json/v2 leaves them), invalid UTF-8, the supplementary
// planes.
var texts = []string{
	"", "A12", "Front desk", `quote " and \ backslash`, "tab\tnew\nline\r\x00\x1f\x7f",
	"<b>&amp;</b>", "line\u2028sep\u2029", "bad \xff\xfe utf8", "\xc3", "caf\u00e9", "emoji \U0001F600",
	"日本語", "\ufffd", "/slash/",
}

// fill sets every exported field v can reach at random, pointers and
// maps included (nil about one time in four), so a field added to the
// view shows in the encoder's output.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if r.IntN(4) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			zones := []*time.Location{time.UTC, time.FixedZone("x", -3*3600), time.FixedZone("y", 5*3600+1800)}
			t := time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(zones[r.IntN(len(zones))])
			if r.IntN(5) == 0 {
				t = t.Truncate(time.Second) // no fraction
			}
			v.Set(reflect.ValueOf(t))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i))
			}
		}
	case reflect.String:
		v.SetString(texts[r.IntN(len(texts))])
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64N(2e6) - 1e6)
	case reflect.Float64:
		v.SetFloat(r.Float64() * 1000)
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Map:
		if r.IntN(4) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		m := reflect.MakeMap(v.Type())
		for range r.IntN(5) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(r, k)
			fill(r, e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	default:
		panic("fill: no case for " + v.Type().String())
	}
}

func encoder() func(any) ([]byte, error) {
	return httpx.NewApp(httpx.AppConfig{}).Config().JSONEncoder
}

// TestViewJSONMatchesTheEncoder holds appendView to the bytes httpx's
// encoder writes for the same view, on thousands of views with every
// field set at random: where appendView takes the view, the output is
// the same; where it declines, the encoder answers.
func TestViewJSONMatchesTheEncoder(t *testing.T) {
	enc := encoder()
	r := rand.New(rand.NewPCG(16, 55))
	declined := 0
	for i := range 5000 {
		var v turns.View
		fill(r, reflect.ValueOf(&v).Elem())
		want, err := enc(v)
		got, ok := appendView(nil, &v)
		if err != nil {
			// Refused (two invalid keys that become one): the encoder
			// must be the one to say so.
			if ok {
				t.Fatalf("view %d: taken, but the encoder refuses it: %v", i, err)
			}
			declined++
			continue
		}
		if !ok {
			declined++
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("view %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// Declined only for maps with keys past the basic plane or invalid:
	// most views must take the fast path, or it is not one.
	if declined > 2500 {
		t.Errorf("appendView declined %d of 5000 views", declined)
	}
}

// TestViewJSONDeclinesWhatItCannotMatch: a time json/v2 refuses, and map
// keys whose order is not their bytes', go to the encoder.
func TestViewJSONDeclinesWhatItCannotMatch(t *testing.T) {
	for name, v := range map[string]turns.View{
		"year 10000":      {Turn: turns.Turn{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		"negative year":   {Turn: turns.Turn{UpdatedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}},
		"offset of a day": {Turn: turns.Turn{CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("z", 24*3600))}},
		"emoji key":       {Turn: turns.Turn{FormResponse: map[string]string{"\U0001F600": "a", "\uffff": "b"}}},
		"invalid key":     {Turn: turns.Turn{FormResponse: map[string]string{"\xff": "a", "\xfe": "b"}}},
	} {
		if _, ok := appendView(nil, &v); ok {
			t.Errorf("%s: taken", name)
		}
	}
}

// TestWriteViewAnswersAsTheEncoder checks the whole answer through a
// fiber app: status, content type and body as httpx.OK gives them, and
// a view the fast path declines still answered by the encoder (its
// refusal included).
func TestWriteViewAnswersAsTheEncoder(t *testing.T) {
	app := httpx.NewApp(httpx.AppConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	views := map[string]turns.View{
		"plain":    {Turn: turns.Turn{ID: "turn_1", Status: turns.Waiting, FormResponse: map[string]string{"b": "2", "a": "1"}}, Position: new(int)},
		"declined": {Turn: turns.Turn{ID: "turn_2", FormResponse: map[string]string{"\U0001F600": "x", "\uffff": "y"}}},
		"refused":  {Turn: turns.Turn{ID: "turn_3", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	app.Get("/fast/:name", func(c *fiber.Ctx) error { v := views[c.Params("name")]; return writeView(c, fiber.StatusOK, &v) })
	app.Get("/slow/:name", func(c *fiber.Ctx) error { return httpx.OK(c, views[c.Params("name")]) })
	get := func(path string) (int, string, []byte) {
		resp, err := app.Test(httptest.NewRequest("GET", path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), b
	}
	for name := range views {
		fs, fct, fb := get("/fast/" + name)
		ss, sct, sb := get("/slow/" + name)
		// Request ids differ; errors carry one in their body.
		if name == "refused" {
			if fs != 500 || ss != 500 {
				t.Errorf("refused: %d and %d, want 500 from both", fs, ss)
			}
			continue
		}
		if fs != ss || fct != sct || !bytes.Equal(fb, sb) {
			t.Errorf("%s: writeView %d %s %s\nhttpx.OK %d %s %s", name, fs, fct, fb, ss, sct, sb)
		}
	}
}
