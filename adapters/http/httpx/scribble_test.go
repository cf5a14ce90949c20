package httpx

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
)

// TestScribbleRequests: what a handler keeps of its request without a
// copy (a route parameter, a query value, a header, a cookie, the body)
// reads as '#'s once the response is made, and what it copied is intact.
func TestScribbleRequests(t *testing.T) {
	app := NewApp(AppConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var kept, copied []string // of the latest request
	app.Post("/things/:thingId", func(c *fiber.Ctx) error {
		kept = []string{c.Params("thingId"), c.Query("q"), c.Get("X-Thing"), c.Cookies("k"), utils.UnsafeString(c.Request().Body())}
		copied = make([]string, len(kept))
		for i, v := range kept {
			copied[i] = strings.Clone(v)
		}
		return c.SendString(kept[0])
	})
	ScribbleRequests(app)
	req := httptest.NewRequest("POST", "/things/thing_1?q=query-value", strings.NewReader(`{"body":"value"}`))
	req.Header.Set("X-Thing", "header-value")
	req.Header.Set("Cookie", "k=cookie-value")
	resp, err := app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "thing_1" {
		t.Fatalf("answer %q: the response must be made before the scribble", b)
	}
	first, firstCopied := kept, copied
	// The same path again: fiber's context comes back from its pool, but
	// with new path buffers, so the first request's alias stays scribbled.
	if _, err := app.Test(httptest.NewRequest("POST", "/things/thing_1", nil)); err != nil {
		t.Fatal(err)
	}
	if first[0] != "#######" {
		t.Errorf("the first request's route parameter reads %q after a request for the same path", first[0])
	}
	kept, copied = first, firstCopied
	want := []string{"thing_1", "query-value", "header-value", "cookie-value", `{"body":"value"}`}
	for i := range want {
		if copied[i] != want[i] {
			t.Errorf("copy %d = %q, want %q", i, copied[i], want[i])
		}
		if kept[i] != strings.Repeat("#", len(want[i])) {
			t.Errorf("kept alias %d = %q, want it scribbled", i, kept[i])
		}
	}
}
