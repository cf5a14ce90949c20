package httpx

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

func TestErrorHandlerMapsEveryKind(t *testing.T) {
	app, logs := newTestApp(t, AppConfig{})
	cases := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"invalid", platform.InvalidField("name", "required", "is required"), 400, "VALIDATION_ERROR"},
		{"unauthorized", platform.NewError(platform.KindUnauthorized, "UNAUTHORIZED", "no", nil), 401, "UNAUTHORIZED"},
		{"payment", platform.NewError(platform.KindPaymentRequired, "PREMIUM_REQUIRED", "no", nil), 402, "PREMIUM_REQUIRED"},
		{"forbidden", platform.ForeignResource("queue"), 403, "FORBIDDEN"},
		{"notfound", platform.NotFound("queue", "que_1"), 404, "NOT_FOUND"},
		{"conflict", platform.Conflict("QUEUE_CLOSED", "the queue is closed", nil), 409, "QUEUE_CLOSED"},
		{"unprocessable", platform.Unprocessable("INVALID_TRANSITION", "no", nil), 422, "INVALID_TRANSITION"},
		{"ratelimited", platform.NewError(platform.KindRateLimited, "RATE_LIMITED", "slow down", nil), 429, "RATE_LIMITED"},
		{"gone", platform.NewError(platform.KindGone, "DISPLAY_TOKEN_REVOKED", "revoked", nil), 410, "DISPLAY_TOKEN_REVOKED"},
		{"internal kind", platform.NewError(platform.KindInternal, "DB_DOWN", "pq: secret detail", nil), 500, "INTERNAL_ERROR"},
		{"unknown kind", platform.NewError(platform.Kind(99), "WHAT", "secret detail", nil), 500, "INTERNAL_ERROR"},
		{"wrapped", fmt.Errorf("use case: %w", platform.NotFound("turn", "turn_1")), 404, "NOT_FOUND"},
		{"plain", errors.New("pq: password authentication failed secret detail"), 500, "INTERNAL_ERROR"},
		{"fiber teapot", fiber.NewError(http.StatusTeapot), 418, "I'M_A_TEAPOT"},
		{"fiber 503", fiber.ErrServiceUnavailable, 500, "INTERNAL_ERROR"},
	}
	for _, tc := range cases {
		app.Get("/"+strings.ReplaceAll(tc.name, " ", "-"), func(c *fiber.Ctx) error { return tc.err })
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, app, "GET", "/"+strings.ReplaceAll(tc.name, " ", "-"), "")
			e := expectError(t, r, tc.status, tc.code)
			if strings.Contains(string(r.body), "secret") {
				t.Errorf("internal detail leaked: %s", r.body)
			}
			if tc.status == 500 && !strings.Contains(logs.String(), e.Error.RequestID) {
				t.Errorf("500 not logged with its request id")
			}
		})
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Errorf("the real error of a 500 is not logged")
	}
}

func TestErrorEnvelopeShape(t *testing.T) {
	app, _ := newTestApp(t, AppConfig{})
	app.Get("/x", func(c *fiber.Ctx) error { return platform.NewError(platform.KindConflict, "X", "msg", nil) })
	r := do(t, app, "GET", "/x", "")
	want := `{"error":{"code":"X","message":"msg","details":{},"requestId":"` + r.header.Get(HeaderRequestID) + `"}}`
	if string(r.body) != want {
		t.Errorf("body = %s\nwant   %s", r.body, want)
	}
}

func TestValidationDetailsCarryFields(t *testing.T) {
	app, _ := newTestApp(t, AppConfig{})
	app.Get("/x", func(c *fiber.Ctx) error {
		var v platform.Validator
		v.Len("name", "", 1, 10)
		v.Range("capacity", 0, 1, 5)
		return v.Err()
	})
	r := do(t, app, "GET", "/x", "")
	e := expectError(t, r, 400, "VALIDATION_ERROR")
	fields := e.fields()
	if len(fields) != 2 {
		t.Fatalf("fields = %v", e.Error.Details)
	}
	f := fields[0]
	if f.Path != "name" || f.Rule != "min_length" || f.Message == "" {
		t.Errorf("field = %v", f)
	}
}

func TestRouterErrors(t *testing.T) {
	for _, withNotFound := range []bool{false, true} {
		t.Run(fmt.Sprint("NotFound mounted=", withNotFound), func(t *testing.T) {
			app, logs := newTestApp(t, AppConfig{BodyLimit: 64})
			app.Get("/api/v1/queues/:queueId", func(c *fiber.Ctx) error { return OK(c, fiber.Map{"id": c.Params("queueId")}) })
			app.Post("/api/v1/queues", func(c *fiber.Ctx) error { return Created(c, fiber.Map{}) })
			if withNotFound {
				app.Use(NotFound())
			}

			r := do(t, app, "GET", "/api/v1/nope", "")
			e := expectError(t, r, 404, "NOT_FOUND")
			if e.Error.Message != "no route GET /api/v1/nope" {
				t.Errorf("message = %q", e.Error.Message)
			}

			r = do(t, app, "DELETE", "/api/v1/queues/que_1", "")
			e = expectError(t, r, 405, "METHOD_NOT_ALLOWED")
			if got := r.header.Get("Allow"); got != "GET, HEAD" {
				t.Errorf("Allow = %q", got)
			}
			if fmt.Sprint(e.Error.Details["allowed"]) != "[GET HEAD]" {
				t.Errorf("details = %v", e.Error.Details)
			}

			// app.Test reports fasthttp's body-limit error instead of the
			// response; a real server on an in-memory listener does not.
			r = serve(t, app, "POST", "/api/v1/queues", strings.Repeat("x", 100), "Content-Type", "application/json")
			e = expectError(t, r, 413, "PAYLOAD_TOO_LARGE")
			if e.Error.Details["limit"] != float64(64) {
				t.Errorf("details = %v", e.Error.Details)
			}

			r = do(t, app, "GET", "/api/v1/queues/que_1", "")
			if r.status != 200 || string(r.body) != `{"id":"que_1"}` {
				t.Errorf("GET = %d %s", r.status, r.body)
			}
			if !strings.Contains(logs.String(), `"status":413`) {
				t.Errorf("413 not logged: %s", logs)
			}
		})
	}
}

func TestRecover(t *testing.T) {
	app, logs := newTestApp(t, AppConfig{})
	app.Get("/boom", func(c *fiber.Ctx) error { panic("secret invariant broken") })
	r := do(t, app, "GET", "/boom", "")
	e := expectError(t, r, 500, "INTERNAL_ERROR")
	if strings.Contains(string(r.body), "secret") {
		t.Errorf("panic leaked: %s", r.body)
	}
	l := logs.String()
	if !strings.Contains(l, "secret invariant broken") || !strings.Contains(l, "goroutine") || !strings.Contains(l, e.Error.RequestID) {
		t.Errorf("panic, stack or request id not logged: %s", l)
	}
	// The server survives.
	if r := do(t, app, "GET", "/boom", ""); r.status != 500 {
		t.Errorf("second request = %d", r.status)
	}
}

func TestRequestID(t *testing.T) {
	app, _ := newTestApp(t, AppConfig{})
	app.Get("/id", func(c *fiber.Ctx) error { return OK(c, fiber.Map{"id": RequestID(c)}) })
	cases := []struct {
		in   string
		keep bool
	}{
		{"", false},
		{"abc-123_X.y:z", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"has space", false},
		{"bad\"quote", false},
		{"ünï", false},
	}
	for _, tc := range cases {
		var h []string
		if tc.in != "" {
			h = []string{HeaderRequestID, tc.in}
		}
		r := do(t, app, "GET", "/id", "", h...)
		got := r.header.Get(HeaderRequestID)
		if tc.keep && got != tc.in {
			t.Errorf("%q: header = %q, want kept", tc.in, got)
		}
		if !tc.keep && (!strings.HasPrefix(got, "req_") || len(got) != 30) {
			t.Errorf("%q: header = %q, want generated req_ id", tc.in, got)
		}
		if string(r.body) != `{"id":"`+got+`"}` {
			t.Errorf("%q: handler saw %s, header %q", tc.in, r.body, got)
		}
	}
}

func TestAccessLog(t *testing.T) {
	app, logs := newTestApp(t, AppConfig{})
	api := app.Group("/api/v1", Auth(testAuth))
	api.Get("/queues/:queueId", Require("queues:read"), func(c *fiber.Ctx) error {
		return platform.NotFound("queue", c.Params("queueId"))
	})
	r := do(t, app, "GET", "/api/v1/queues/que_XYZ?cursor=secretcursor", "", HeaderAPIKey, "reader", "Authorization", "Bearer hunter2")
	if r.status != 404 {
		t.Fatalf("status = %d", r.status)
	}
	l := logs.String()
	for _, want := range []string{`"route":"/api/v1/queues/:queueId"`, `"status":404`, `"account":"acc_1"`, `"method":"GET"`,
		`"requestId":"` + r.header.Get(HeaderRequestID) + `"`, `"duration":`} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %s: %s", want, l)
		}
	}
	for _, leak := range []string{"reader", "hunter2", "que_XYZ", "secretcursor"} {
		if strings.Contains(l, leak) {
			t.Errorf("log leaks %q: %s", leak, l)
		}
	}
	if n := strings.Count(l, `"msg":"http request"`); n != 1 {
		t.Errorf("%d access lines, want 1", n)
	}
}

func TestUnencodableDetailsStillGiveAnEnvelope(t *testing.T) {
	app, logs := newTestApp(t, AppConfig{})
	app.Get("/x", func(c *fiber.Ctx) error {
		return platform.Conflict("X", "msg", map[string]any{"bad": make(chan int)})
	})
	e := expectError(t, do(t, app, "GET", "/x", ""), 500, "INTERNAL_ERROR")
	if !strings.Contains(logs.String(), e.Error.RequestID) {
		t.Errorf("not logged")
	}
}

// TestAccessLineFormat pins the access line as the JSON handler writes it:
// its keys in order (no source, however the record is built), the level
// by status, and values of the right kinds.
func TestAccessLineFormat(t *testing.T) {
	app, logs := newTestApp(t, AppConfig{})
	app.Get("/ok", func(c *fiber.Ctx) error { return OK(c, fiber.Map{}) })
	app.Get("/boom", func(c *fiber.Ctx) error { return errors.New("boom") })
	for path, level := range map[string]string{"/ok": "INFO", "/boom": "ERROR"} {
		logs.Reset()
		r := do(t, app, "GET", path, "")
		var line string
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if strings.Contains(l, `"msg":"http request"`) {
				line = l
			}
		}
		dec := json.NewDecoder(strings.NewReader(line))
		var keys []string
		values := map[string]any{}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("%s: not an object: %q", path, line)
		}
		for dec.More() {
			k, _ := dec.Token()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%s: %v in %q", path, err, line)
			}
			keys = append(keys, k.(string))
			values[k.(string)] = v
		}
		want := "time level msg method route status duration requestId account client"
		if got := strings.Join(keys, " "); got != want {
			t.Errorf("%s: keys %q, want %q", path, got, want)
		}
		if _, err := time.Parse(time.RFC3339Nano, values["time"].(string)); err != nil {
			t.Errorf("%s: time %v", path, values["time"])
		}
		if values["level"] != level || values["method"] != "GET" || values["route"] != path ||
			values["status"] != float64(r.status) || values["requestId"] != r.header.Get(HeaderRequestID) {
			t.Errorf("%s: %q", path, line)
		}
		if d, ok := values["duration"].(float64); !ok || d <= 0 {
			t.Errorf("%s: duration %v", path, values["duration"])
		}
	}
}
