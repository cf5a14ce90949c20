package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// displayLink makes a display token for a new run and returns its URL,
// sending extra headers with the request.
func displayLink(t *testing.T, a *apptest.App, headers map[string]string) (url, token string) {
	t.Helper()
	run := whRun(t, a)
	h := map[string]string{"X-API-Key": a.Key}
	for k, v := range headers {
		h[k] = v
	}
	var created struct{ URL, Token string }
	a.Do(http.MethodPost, "/api/v1/queue-runs/"+run+"/display-tokens", map[string]any{"label": "Lobby"}, h).Must(http.StatusCreated, &created)
	return created.URL, created.Token
}

// TestBehindAProxy: display links come from http.public_url, else from the
// request's own scheme and host, never from an untrusted client's
// X-Forwarded-*; the keyless budget follows X-Forwarded-For only from a
// trusted proxy; the display boards have a budget of their own.
func TestBehindAProxy(t *testing.T) {
	t.Parallel()
	forged := map[string]string{"X-Forwarded-Proto": "javascript", "X-Forwarded-Host": "evil.example", "X-Forwarded-For": "203.0.113.66"}
	keyless := func(a *apptest.App, from string) *apptest.Response {
		return a.Do(http.MethodGet, "/api/v1/entities", nil, map[string]string{"X-Forwarded-For": from})
	}
	const perMinute = 3

	t.Run("no proxy trusted", func(t *testing.T) {
		a := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 1 << 20 }))
		url, token := displayLink(t, a, forged)
		if want := a.BaseURL + "/display/" + token; url != want {
			t.Errorf("display link %s, want %s", url, want)
		}
		b := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = perMinute }))
		for i := range perMinute {
			keyless(b, "203.0.113."+string(rune('1'+i)))
		}
		if r := keyless(b, "198.51.100.1"); r.Status != http.StatusTooManyRequests {
			t.Errorf("a forged X-Forwarded-For got a fresh budget: %d", r.Status)
		}
	})

	t.Run("public URL", func(t *testing.T) {
		a := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.HTTP.PublicURL = "https://queues.example.com/" }))
		url, token := displayLink(t, a, forged)
		if want := "https://queues.example.com/display/" + token; url != want {
			t.Errorf("display link %s, want %s", url, want)
		}
	})

	t.Run("trusted proxy", func(t *testing.T) {
		a := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) {
			c.HTTP.TrustedProxies = []string{"127.0.0.1/32"}
			c.RateLimit.PerMinute = perMinute
		}))
		url, token := displayLink(t, a, map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"})
		if want := strings.Replace(a.BaseURL, "http://", "https://", 1) + "/display/" + token; url != want {
			t.Errorf("display link %s, want %s", url, want)
		}
		// Two clients behind the proxy: one spends its budget, the other
		// keeps its own.
		for range perMinute {
			keyless(a, "198.51.100.7")
		}
		if r := keyless(a, "198.51.100.7"); r.Status != http.StatusTooManyRequests {
			t.Errorf("over budget: %d", r.Status)
		}
		if r := keyless(a, "198.51.100.8"); r.Status != http.StatusUnauthorized || r.Header.Get("X-RateLimit-Remaining") != "2" {
			t.Errorf("another client behind the proxy: %d, remaining %s", r.Status, r.Header.Get("X-RateLimit-Remaining"))
		}
		// The board, from the address whose keyless budget is spent.
		for i := range perMinute {
			r := a.Do(http.MethodGet, "/display/"+token+"/board", nil, map[string]string{"X-Forwarded-For": "198.51.100.7"})
			if r.Status != http.StatusOK {
				t.Fatalf("board read %d from an address with no keyless budget left: %d %s", i+1, r.Status, r.Body)
			}
		}
	})
}
