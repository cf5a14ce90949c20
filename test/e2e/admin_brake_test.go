package e2e

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// TestAdminBrake: 300 wrong admin tokens from one client address get 401
// until the address's failure budget is spent, then 429 with the rate
// headers and Retry-After, even for the right token; the right token from
// another address behind the same trusted proxy still works (issue 14).
func TestAdminBrake(t *testing.T) {
	t.Parallel()
	const budget = 10
	a := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) {
		c.HTTP.TrustedProxies = []string{"127.0.0.1/32"}
		c.Admin.AuthFailuresPerMinute = budget
	}))
	from := func(addr, token string) *apptest.Response {
		return a.Do(http.MethodGet, "/admin/v1/accounts/"+a.AccountID, nil,
			map[string]string{"Authorization": "Bearer " + token, "X-Forwarded-For": addr})
	}
	var unauthorized, limited int
	for i := range 300 {
		r := from("198.51.100.20", "wrong-token-"+strconv.Itoa(i))
		switch r.Status {
		case http.StatusUnauthorized:
			unauthorized++
			if got, want := r.Header.Get("X-RateLimit-Remaining"), strconv.Itoa(budget-unauthorized); got != want {
				t.Fatalf("401 #%d: X-RateLimit-Remaining %q, want %s", unauthorized, got, want)
			}
		case http.StatusTooManyRequests:
			limited++
			if r.ErrorCode() != "RATE_LIMITED" || r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(budget) ||
				r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("X-RateLimit-Reset") == "" {
				t.Fatalf("429 without its headers or code: %v %s", r.Header, r.Body)
			}
		default:
			t.Fatalf("wrong token #%d: %d %s", i, r.Status, r.Body)
		}
	}
	t.Logf("300 wrong tokens: %d × 401, %d × 429", unauthorized, limited)
	if unauthorized != budget || limited != 300-budget {
		t.Errorf("300 wrong tokens: %d × 401 and %d × 429, want %d and %d", unauthorized, limited, budget, 300-budget)
	}
	// No token at all is a failure too.
	if r := a.Do(http.MethodGet, "/admin/v1/accounts/"+a.AccountID, nil, map[string]string{"X-Forwarded-For": "198.51.100.20"}); r.Status != http.StatusTooManyRequests {
		t.Errorf("no token from the braked address: %d", r.Status)
	}
	// The braked address cannot use the brake as an oracle: the right
	// token is refused too until the minute ends.
	if r := from("198.51.100.20", apptest.AdminToken); r.Status != http.StatusTooManyRequests {
		t.Errorf("right token from the braked address: %d, want 429", r.Status)
	}
	if r := from("198.51.100.21", apptest.AdminToken); r.Status != http.StatusOK {
		t.Errorf("right token from another address: %d %s", r.Status, r.Body)
	}
	if r := from("198.51.100.22", "wrong"); r.Status != http.StatusUnauthorized || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(budget-1) {
		t.Errorf("another address's first failure: %d, remaining %s", r.Status, r.Header.Get("X-RateLimit-Remaining"))
	}
}
