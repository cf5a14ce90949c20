package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestAuthChangesReachEveryProcess (issue 14): revoking a key or changing an
// account's plan is seen by the first request after the admin call's answer
// on the process that made it, and by another process on the same database
// within 100 ms (LISTEN/NOTIFY on qms_auth), not after the cache's TTL.
func TestAuthChangesReachEveryProcess(t *testing.T) {
	url := pgtest.URL(t)
	a := apptest.PostgresAt(t, url)
	b := apptest.PostgresAt(t, url)
	const bound = 100 * time.Millisecond

	// seen polls b until the key gets status, and returns how long it took.
	seen := func(t *testing.T, key, path string, status int) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			r := b.APIWith(key, http.MethodGet, path, nil)
			if r.Status == status {
				return time.Since(start)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("process b still answers %d after 3 s: %s", r.Status, r.Body)
			}
			if time.Since(start) < 200*time.Millisecond {
				time.Sleep(5 * time.Millisecond)
			} else { // failed already; stay below the refused requests' rate limit
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	warm := func(key, path string) { // cache the key as valid on both processes
		a.APIWith(key, http.MethodGet, path, nil).Must(http.StatusOK, nil)
		b.APIWith(key, http.MethodGet, path, nil).Must(http.StatusOK, nil)
	}

	t.Run("revocation", func(t *testing.T) {
		acc, key := a.NewAccount("premium", "entities:read")
		warm(key, "/entities")
		var keys struct{ Data []struct{ ID string } }
		a.Admin(http.MethodGet, "/admin/v1/accounts/"+acc+"/api-keys", nil, &keys)
		a.Admin(http.MethodPost, "/admin/v1/api-keys/"+keys.Data[0].ID+"/revoke", nil, nil)
		pfErr(t, a.APIWith(key, http.MethodGet, "/entities", nil), 401, "REVOKED_API_KEY")
		d := seen(t, key, "/entities", 401)
		t.Logf("revocation seen by the other process after %v", d)
		if d > bound {
			t.Errorf("revocation took %v on the other process, want ≤ %v", d, bound)
		}
	})
	t.Run("downgrade and upgrade", func(t *testing.T) {
		acc, key := a.NewAccount("premium", "entities:read")
		warm(key, "/entities")
		a.Admin(http.MethodPut, "/admin/v1/accounts/"+acc+"/plan", map[string]any{"plan": "free"}, nil)
		pfErr(t, a.APIWith(key, http.MethodGet, "/entities", nil), 402, "PREMIUM_REQUIRED")
		d := seen(t, key, "/entities", 402)
		t.Logf("downgrade seen by the other process after %v", d)
		if d > bound {
			t.Errorf("downgrade took %v on the other process, want ≤ %v", d, bound)
		}
		a.Admin(http.MethodPut, "/admin/v1/accounts/"+acc+"/plan", map[string]any{"plan": "premium"}, nil)
		a.APIWith(key, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil)
		d = seen(t, key, "/entities", 200)
		t.Logf("upgrade seen by the other process after %v", d)
		if d > bound {
			t.Errorf("upgrade took %v on the other process, want ≤ %v", d, bound)
		}
	})
}
