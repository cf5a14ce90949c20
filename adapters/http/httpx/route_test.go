package httpx

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestParamAsFiber: Param reads what c.Params reads, on plain templates
// (cut from the path) and on the others (through c.Params), for paths
// with trailing slashes, percent escapes, dots, colons and case.
func TestParamAsFiber(t *testing.T) {
	app := NewApp(AppConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	templates := []string{
		"/api/v1/turns/:turnId",
		"/api/v1/turns/:turnId/cancel",
		"/api/v1/queue-runs/:runId/turns/:turnId",
		"/x/:a-:b",
		"/y/:file.json",
		"/z/:opt?",
		"/w/*",
		"/v/:name/+",
		"/u/:id<int>",
	}
	type seen struct{ params, param map[string]string }
	var got seen
	for _, tmpl := range templates {
		var names []string
		for _, seg := range strings.Split(tmpl, "/") {
			if strings.HasPrefix(seg, ":") {
				name := strings.TrimPrefix(seg, ":")
				name, _, _ = strings.Cut(name, "-")
				name, _, _ = strings.Cut(name, ".")
				name, _, _ = strings.Cut(name, "?")
				name, _, _ = strings.Cut(name, "<")
				names = append(names, name)
			}
		}
		names = append(names, "b", "missing", "*", "+", "1")
		app.Get(tmpl, func(c *fiber.Ctx) error {
			got = seen{map[string]string{}, map[string]string{}}
			for _, n := range names {
				got.param[n] = Param(c, n)
				got.params[n] = c.Params(n)
			}
			return c.SendStatus(200)
		})
	}
	paths := []string{
		"/api/v1/turns/tur_1", "/api/v1/turns/tur_1/", "/api/v1/turns/TUR%2F1", "/api/v1/turns/a.b:c",
		"/api/v1/turns/tur_1/cancel", "/api/v1/turns/tur_1/cancel/",
		"/api/v1/queue-runs/run_1/turns/tur_2", "/api/v1/queue-runs/run_1/turns/tur_2/",
		"/x/one-two", "/y/report.json", "/z/q", "/w/a/b", "/v/n/rest/of", "/u/12",
	}
	for _, p := range paths {
		got = seen{}
		resp, err := app.Test(httptest.NewRequest("GET", p, nil))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || got.param == nil {
			t.Fatalf("%s: status %d", p, resp.StatusCode)
		}
		for n, want := range got.params {
			if got.param[n] != want {
				t.Errorf("%s: Param(%q) = %q, c.Params = %q", p, n, got.param[n], want)
			}
		}
	}
}

func TestSegmentParam(t *testing.T) {
	for _, tc := range []struct {
		tmpl, path, name, want string
		ok                     bool
	}{
		{"/api/v1/turns/:turnId", "/api/v1/turns/tur_1", "turnId", "tur_1", true},
		{"/api/v1/turns/:turnId", "/api/v1/turns/tur_1/", "turnId", "tur_1", true},
		{"/api/v1/turns/:turnId", "/api/v1/turns/tur_1//", "turnId", "", false},
		{"/api/v1/turns/:turnId", "/api/v1/turns/", "turnId", "", false},
		{"/api/v1/turns/:turnId", "/api/v1/Turns/tur_1", "turnId", "", false},
		{"/api/v1/turns/:turnId/cancel", "/api/v1/turns/tur_1/cancel", "turnId", "tur_1", true},
		{"/api/v1/turns/:turnId/cancel", "/api/v1/turns/tur_1/cancel/x", "turnId", "", false},
		{"/api/v1/turns/:turnId", "/api/v1/turns/tur_1", "runId", "", false},
		{"/x/:a-:b", "/x/one-two", "a", "", false},
		{"/y/:file.json", "/y/r.json", "file", "", false},
		{"/z/:opt?", "/z/q", "opt", "", false},
		{"/w/*", "/w/a", "*", "", false},
		{"/l/a:b/:id", "/l/a:b/1", "id", "", false},
	} {
		if v, ok := segmentParam(tc.tmpl, tc.path, tc.name); v != tc.want || ok != tc.ok {
			t.Errorf("segmentParam(%q, %q, %q) = %q, %v; want %q, %v", tc.tmpl, tc.path, tc.name, v, ok, tc.want, tc.ok)
		}
	}
}
