package httpx

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

var testCursors = NewCursors([]byte("0123456789abcdef0123456789abcdef"))

func pageApp(t *testing.T) *fiber.App {
	t.Helper()
	app, _ := newTestApp(t, AppConfig{})
	api := app.Group("/api/v1", Auth(testAuth))
	items := []string{"a", "b", "c", "d", "e"}
	list := func(name string) fiber.Handler {
		return func(c *fiber.Ctx) error {
			req, err := ParsePage(c, testCursors, name)
			if err != nil {
				return err
			}
			var rest []string
			for _, it := range items {
				if it > req.After {
					rest = append(rest, it)
				}
			}
			if len(rest) > req.Limit+1 {
				rest = rest[:req.Limit+1]
			}
			return WritePage(c, testCursors, name, platform.PageOf(rest, req.Limit, func(s string) string { return s }), req.Limit)
		}
	}
	api.Get("/queues", list("queues"))
	api.Get("/turns", list("turns"))
	return app
}

type pageOut struct {
	Data       []string `json:"data"`
	Pagination struct {
		NextCursor *string `json:"nextCursor"`
		Limit      int     `json:"limit"`
	} `json:"pagination"`
}

func getPage(t *testing.T, app *fiber.App, path, key string) (pageOut, response) {
	t.Helper()
	r := do(t, app, "GET", path, "", HeaderAPIKey, key)
	var p pageOut
	if r.status == 200 {
		if err := decodeBytes(r.body, &p); err != nil {
			t.Fatalf("page body %s: %v", r.body, err)
		}
	}
	return p, r
}

func TestPagination(t *testing.T) {
	app := pageApp(t)

	p, r := getPage(t, app, "/api/v1/queues", "reader")
	if r.status != 200 || len(p.Data) != 5 || p.Pagination.NextCursor != nil || p.Pagination.Limit != 50 {
		t.Fatalf("default page = %d %s", r.status, r.body)
	}
	if !strings.Contains(string(r.body), `"nextCursor":null`) {
		t.Errorf("nextCursor not null: %s", r.body)
	}

	// Walk two at a time.
	var seen []string
	path := "/api/v1/queues?limit=2"
	for i := 0; i < 5; i++ {
		p, r = getPage(t, app, path, "reader")
		if r.status != 200 {
			t.Fatalf("%s = %d %s", path, r.status, r.body)
		}
		seen = append(seen, p.Data...)
		if p.Pagination.NextCursor == nil {
			break
		}
		path = "/api/v1/queues?limit=2&cursor=" + url.QueryEscape(*p.Pagination.NextCursor)
	}
	if strings.Join(seen, "") != "abcde" {
		t.Errorf("walk = %v", seen)
	}

	_, r = getPage(t, app, "/api/v1/queues?limit=2", "reader")
	var first pageOut
	_ = decodeBytes(r.body, &first)
	cursor := *first.Pagination.NextCursor

	raw, _ := base64.RawURLEncoding.DecodeString(cursor)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-cursorMACLen-1] ^= 1 // alter the after key
	forged := testCursors2.Encode("queues", "acc_1", "b")

	for name, tc := range map[string]struct{ path, key string }{
		"tampered":      {"/api/v1/queues?cursor=" + base64.RawURLEncoding.EncodeToString(flipped), "reader"},
		"truncated":     {"/api/v1/queues?cursor=" + cursor[:len(cursor)-4], "reader"},
		"garbage":       {"/api/v1/queues?cursor=%21%21not-base64", "reader"},
		"empty":         {"/api/v1/queues?cursor=", "reader"},
		"forged":        {"/api/v1/queues?cursor=" + forged, "reader"},
		"other account": {"/api/v1/queues?cursor=" + cursor, "other"},
		"other list":    {"/api/v1/turns?cursor=" + cursor, "reader"},
	} {
		t.Run(name, func(t *testing.T) {
			_, r := getPage(t, app, tc.path, tc.key)
			e := expectError(t, r, 400, "INVALID_CURSOR")
			if e.Error.Details["parameter"] != "cursor" {
				t.Errorf("details = %v", e.Error.Details)
			}
		})
	}
	// The same account with another key may continue the walk.
	if _, r := getPage(t, app, "/api/v1/queues?cursor="+cursor, "writer"); r.status != 200 {
		t.Errorf("same account, other key = %d %s", r.status, r.body)
	}
}

var testCursors2 = NewCursors([]byte("another secret of at least 16 bytes"))

func TestPageLimit(t *testing.T) {
	app := pageApp(t)
	for q, want := range map[string]int{"limit=1": 1, "limit=200": 200, "": 50} {
		p, r := getPage(t, app, "/api/v1/queues?"+q, "reader")
		if r.status != 200 || p.Pagination.Limit != want {
			t.Errorf("%q = %d %s", q, r.status, r.body)
		}
	}
	for _, q := range []string{"limit=0", "limit=201", "limit=-1", "limit=abc", "limit=", "limit=1.5", "limit=99999999999999999999"} {
		_, r := getPage(t, app, "/api/v1/queues?"+q, "reader")
		e := expectError(t, r, 400, "VALIDATION_ERROR")
		fields := e.fields()
		if len(fields) != 1 || fields[0].Path != "limit" {
			t.Errorf("%q: details = %v", q, e.Error.Details)
		}
	}
}

func TestWritePageEmpty(t *testing.T) {
	app, _ := newTestApp(t, AppConfig{})
	app.Get("/empty", func(c *fiber.Ctx) error {
		return WritePage(c, testCursors, "queues", platform.Page[int]{}, 10)
	})
	r := do(t, app, "GET", "/empty", "")
	if r.status != 200 || string(r.body) != `{"data":[],"pagination":{"nextCursor":null,"limit":10}}` {
		t.Errorf("empty page = %d %s", r.status, r.body)
	}
}

func TestNewCursorsRefusesShortSecret(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a short secret")
		}
	}()
	NewCursors([]byte("short"))
}

// TestCursorGivenOutBeforeStillDecodes: a cursor made by the code before
// package signed (same secret) decodes to its key, and the same key
// encodes to the same cursor: the wire form did not change.
func TestCursorGivenOutBeforeStillDecodes(t *testing.T) {
	const old = "AShydW5zAC9hcGkvdjEvcXVldWVzL3FfMS9ydW5zAHN0YXR1cz1PUEVOCmFjY19nb2xkZW4yMDI2LTExLTI2VDE4OjAwOjAwWgBydW5fMbyCtFMPWGAc8kMDin1I0sE"
	cs := NewCursors([]byte("golden-cursor-secret-0123456789ab"))
	list, account, after := "runs\x00/api/v1/queues/q_1/runs\x00status=OPEN", "acc_golden", "2026-11-26T18:00:00Z\x00run_1"
	got, err := cs.Decode(old, list, account)
	if err != nil || got != after {
		t.Fatalf("old cursor: %q %v", got, err)
	}
	if again := cs.Encode(list, account, after); again != old {
		t.Fatalf("the cursor's form changed:\n%s\n%s", again, old)
	}
	if _, err := NewCursors([]byte("golden-cursor-secret-0123456789aX")).Decode(old, list, account); err == nil {
		t.Fatal("another secret decodes the cursor")
	}
}
