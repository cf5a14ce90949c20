package e2e

// The per-key rate limit and its headers on every kind of response.

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
)

// ---- rate limit ----

func TestRateLimit(t *testing.T) {
	// The clock stands still: every request is at now, so the sliding minute
	// frees its first slot when now's second is a minute behind (61 s).
	now := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	a := apptest.Memory(t, apptest.WithClock(platformtest.NewClock(now)),
		apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 5 }))
	reset := strconv.FormatInt(now.Add(61*time.Second).Unix(), 10)

	key := a.NewKey(a.AccountID, "entities:read")
	for i := range 5 {
		r := a.APIWith(key, http.MethodGet, "/entities", nil)
		r.Must(http.StatusOK, nil)
		if r.Header.Get("X-RateLimit-Limit") != "5" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) || r.Header.Get("X-RateLimit-Reset") != reset {
			t.Errorf("request %d: limit %q remaining %q reset %q (want reset %s)", i+1, r.Header.Get("X-RateLimit-Limit"),
				r.Header.Get("X-RateLimit-Remaining"), r.Header.Get("X-RateLimit-Reset"), reset)
		}
	}
	r := a.APIWith(key, http.MethodGet, "/entities", nil)
	env := pfErr(t, r, 429, "RATE_LIMITED")
	pfRateHeaders(t, r)
	if r.Header.Get("Retry-After") != "61" || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("Retry-After %q, remaining %q", r.Header.Get("Retry-After"), r.Header.Get("X-RateLimit-Remaining"))
	}
	if env.Error.Details["retryAfter"] != 61.0 || env.Error.Details["limit"] != 5.0 {
		t.Errorf("details %v", env.Error.Details)
	}
	// Another key of the same account has its own budget.
	a.APIWith(a.NewKey(a.AccountID, "entities:read"), http.MethodGet, "/entities", nil).Must(http.StatusOK, nil)
}

// TestRateLimitHeadersOnEveryResponse: the headers come with every kind of
// answer an authenticated key gets, errors included.
func TestRateLimitHeadersOnEveryResponse(t *testing.T) {
	a := pfMemory(t)
	q := pfQueueIn(t, a, pfEntity(t, a, "Centro"), nil)
	a.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/close", nil).Must(http.StatusCreated, nil)
	readOnly := a.NewKey(a.AccountID, "queues:read")
	for _, r := range []*apptest.Response{
		a.API(http.MethodGet, "/entities", nil),
		a.API(http.MethodPost, "/entities", map[string]any{"name": "Norte"}),
		a.API(http.MethodPost, "/entities", map[string]any{"name": 1}),
		a.APIWith(readOnly, http.MethodPost, "/entities", map[string]any{"name": "Sur"}),
		a.API(http.MethodGet, "/queues/que_00000000000000000000000000", nil),
		a.API(http.MethodGet, "/nowhere", nil),
		a.API(http.MethodDelete, "/queues", nil),
		a.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/close-intake", nil),
		a.Do(http.MethodPost, "/api/v1/entities", "x", map[string]string{"X-API-Key": a.Key, "Content-Type": "text/plain"}),
		a.Do(http.MethodGet, "/api/v1/openapi.json", nil, nil),
	} {
		if r.Status == 0 {
			continue
		}
		pfRateHeaders(t, r)
	}
}

// TestRateLimitHeadersOnAuthFailures: spec section 8 and issue 2 section 2
// put the rate-limit headers on every /api/v1 response; a refused key is
// counted (by client address) like an unauthenticated request, so key
// guessing is bounded too.
func TestRateLimitHeadersOnAuthFailures(t *testing.T) {
	a := pfMemory(t)
	acc, key := a.NewAccount("free", "entities:read")
	_ = acc
	for name, r := range map[string]*apptest.Response{
		"401 missing key": a.Do(http.MethodGet, "/api/v1/entities", nil, nil),
		"401 unknown key": a.APIWith("qms_not_a_key_0000000000000000", http.MethodGet, "/entities", nil),
		"402 free plan":   a.APIWith(key, http.MethodGet, "/entities", nil),
	} {
		t.Run(name, func(t *testing.T) { pfRateHeaders(t, r) })
	}
}
