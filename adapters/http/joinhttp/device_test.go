package joinhttp

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// A device cookie set before package signed (same deployment secret) is
// still read, and the same content is written in the same form.
const (
	oldCookieSecret = "golden-cursor-secret-0123456789ab"
	oldCookie       = "eyJxIjpbeyJpIjoicXVlXzEiLCJ0IjpbInRybl8xIiwidHJuXzIiXX1dfQ.qev0_rzVMWrA8IKkXqNZeLfm1nZQ86E0tElWoLZJhKc"
)

func TestDeviceCookieGivenOutBeforeStillReads(t *testing.T) {
	s, err := newSigner(DeriveCookieKey(oldCookieSecret))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newSigner(DeriveCookieKey(oldCookieSecret + "x"))
	app := fiber.New()
	var read, foreign deviceTurns
	app.Get("/read", func(c *fiber.Ctx) error {
		read, foreign = s.read(c), other.read(c)
		return nil
	})
	app.Get("/write", func(c *fiber.Ctx) error {
		s.write(c, read)
		return nil
	})
	req := httptest.NewRequest("GET", "/read", nil)
	req.Header.Set("Cookie", cookieName+"="+oldCookie)
	if _, err := app.Test(req); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(read.turnsOf("que_1"), []string{"trn_1", "trn_2"}) {
		t.Fatalf("old cookie read as %+v", read)
	}
	if len(foreign.Q) != 0 {
		t.Fatalf("another key reads the cookie: %+v", foreign)
	}
	resp, err := app.Test(httptest.NewRequest("GET", "/write", nil))
	if err != nil {
		t.Fatal(err)
	}
	if set := resp.Header.Get("Set-Cookie"); !strings.HasPrefix(set, cookieName+"="+oldCookie+";") {
		t.Fatalf("the cookie's form changed: %s", set)
	}
	// Over the length bound: read as empty, signed or not.
	long := deviceTurns{}
	for i := range cookieQueues {
		long.Q = append(long.Q, deviceQueue{ID: strings.Repeat("q", 60) + string(rune('a'+i)), Turns: slices.Repeat([]string{strings.Repeat("t", 60)}, cookieTurns)})
	}
	var tooLong deviceTurns
	app.Get("/long", func(c *fiber.Ctx) error {
		c.Request().Header.SetCookie(cookieName, s.s.Token(mustJSON(t, long)))
		tooLong = s.read(c)
		return nil
	})
	if _, err := app.Test(httptest.NewRequest("GET", "/long", nil)); err != nil {
		t.Fatal(err)
	}
	if len(tooLong.Q) != 0 {
		t.Fatalf("a cookie over %d bytes was read", cookieMaxLen)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
