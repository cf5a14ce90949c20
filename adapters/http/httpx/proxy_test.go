package httpx

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// app.Test connections come from 0.0.0.0.
func TestClientAddressAndPublicBase(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32"), netip.MustParsePrefix("10.0.0.0/8")}
	for _, tt := range []struct {
		name        string
		proxies     Proxies
		headers     []string
		client, url string
	}{
		{"no proxy trusted: forwarding headers are the client's own", Proxies{},
			[]string{"X-Forwarded-For", "198.51.100.9", "X-Forwarded-Proto", "javascript", "X-Forwarded-Host", "evil.example"},
			"0.0.0.0", "http://qms.test/x"},
		{"a trusted proxy: the nearest untrusted hop", Proxies{Trusted: trusted},
			[]string{"X-Forwarded-For", "203.0.113.5, 198.51.100.9, 10.1.2.3", "X-Forwarded-Proto", "https"},
			"198.51.100.9", "https://qms.test/x"},
		{"a trusted proxy, a scheme that is not one", Proxies{Trusted: trusted},
			[]string{"X-Forwarded-For", "not-an-address, 198.51.100.9", "X-Forwarded-Proto", "javascript"},
			"198.51.100.9", "http://qms.test/x"},
		{"the public URL wins", Proxies{PublicURL: "https://queues.example.com", Trusted: trusted},
			[]string{"X-Forwarded-Proto", "http", "X-Forwarded-Host", "evil.example"},
			"0.0.0.0", "https://queues.example.com/x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			app, logs := newTestApp(t, AppConfig{Proxies: tt.proxies})
			app.Get("/x", func(c *fiber.Ctx) error {
				return c.JSON(fiber.Map{"client": ClientIP(c), "url": PublicBase(c) + "/x"})
			})
			r := do(t, app, "GET", "http://qms.test/x", "", tt.headers...)
			want := `{"client":"` + tt.client + `","url":"` + tt.url + `"}`
			if string(r.body) != want {
				t.Errorf("got %s, want %s", r.body, want)
			}
			if !strings.Contains(logs.String(), `"client":"`+tt.client+`"`) {
				t.Errorf("the request log lacks the client address: %s", logs.String())
			}
		})
	}
}
