package e2e

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestRateLimitHoldsAcrossProcesses starts two qms processes on one
// database and spends one key's budget through both: the key gets its limit
// in total, not per process.
func TestRateLimitHoldsAcrossProcesses(t *testing.T) {
	url := pgtest.URL(t)
	// Both processes stand in the middle of one minute, so the window cannot
	// roll over during the test.
	clock := platformtest.NewClock(time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC))
	limit := apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 10 })
	a := apptest.PostgresAt(t, url, limit, apptest.WithClock(clock))
	b := apptest.PostgresAt(t, url, limit, apptest.WithClock(clock))

	// One key, made through process a, used on both.
	_, key := a.NewAccount("premium", "entities:read")
	ok, limited := 0, 0
	for i := 0; i < 8; i++ {
		for _, app := range []*apptest.App{a, b} {
			resp := app.APIWith(key, http.MethodGet, "/entities", nil)
			switch resp.Status {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
				limited++
				if resp.Header.Get("Retry-After") == "" || resp.ErrorCode() != "RATE_LIMITED" {
					t.Fatalf("429 without Retry-After or RATE_LIMITED: %v %s", resp.Header, resp.Body)
				}
			default:
				t.Fatalf("unexpected %d: %s", resp.Status, resp.Body)
			}
			if resp.Header.Get("X-RateLimit-Limit") != "10" {
				t.Fatalf("X-RateLimit-Limit = %q", resp.Header.Get("X-RateLimit-Limit"))
			}
		}
	}
	if ok != 10 || limited != 6 {
		t.Fatalf("16 requests through two processes with a limit of 10: %d allowed, %d limited", ok, limited)
	}
}

// TestRateLimitHoldsAcrossThreeProcesses spends one key's budget through
// three processes on one database, and checks that the headers of a refusal
// are exact: every request stands at one instant, so the budget frees when
// its second is a minute behind, and Retry-After says 61 s.
func TestRateLimitHoldsAcrossThreeProcesses(t *testing.T) {
	url := pgtest.URL(t)
	at := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	clock := platformtest.NewClock(at)
	limit := apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 10 })
	apps := []*apptest.App{
		apptest.PostgresAt(t, url, limit, apptest.WithClock(clock)),
		apptest.PostgresAt(t, url, limit, apptest.WithClock(clock)),
		apptest.PostgresAt(t, url, limit, apptest.WithClock(clock)),
	}
	_, key := apps[0].NewAccount("premium", "entities:read")
	ok, limited := 0, 0
	for i := 0; i < 6; i++ {
		for _, app := range apps {
			resp := app.APIWith(key, http.MethodGet, "/entities", nil)
			switch resp.Status {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
				limited++
				reset := strconv.FormatInt(at.Add(61*time.Second).Unix(), 10)
				if resp.Header.Get("Retry-After") != "61" || resp.Header.Get("X-RateLimit-Reset") != reset ||
					resp.Header.Get("X-RateLimit-Remaining") != "0" {
					t.Fatalf("429 headers: %v, want Retry-After 61 and reset %s", resp.Header, reset)
				}
			default:
				t.Fatalf("unexpected %d: %s", resp.Status, resp.Body)
			}
		}
	}
	if ok != 10 || limited != 8 {
		t.Fatalf("18 requests through three processes with a limit of 10: %d allowed, %d limited", ok, limited)
	}
}
