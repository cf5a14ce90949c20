package e2e

// Authentication, plans and scopes, foreign resources, and the document
// that needs no key (issue 2), through a real process.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/openapitest"
)

// ---- authentication, plans and scopes ----

func TestAuthentication(t *testing.T) {
	a := pfMemory(t)
	t.Run("401 missing key", func(t *testing.T) {
		pfErr(t, a.Do(http.MethodGet, "/api/v1/entities", nil, nil), 401, "UNAUTHORIZED")
	})
	t.Run("401 unknown key", func(t *testing.T) {
		pfErr(t, a.APIWith("qms_not_a_key_0000000000000000", http.MethodGet, "/entities", nil), 401, "INVALID_API_KEY")
	})
	t.Run("401 revoked key, at once", func(t *testing.T) {
		acc, key := a.NewAccount("premium", "entities:read")
		a.APIWith(key, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil) // cached as valid
		var keys struct{ Data []struct{ ID string } }
		a.Admin(http.MethodGet, "/admin/v1/accounts/"+acc+"/api-keys", nil, &keys)
		a.Admin(http.MethodPost, "/admin/v1/api-keys/"+keys.Data[0].ID+"/revoke", nil, nil)
		pfErr(t, a.APIWith(key, http.MethodGet, "/entities", nil), 401, "REVOKED_API_KEY")
	})
	t.Run("402 account not on premium, every key", func(t *testing.T) {
		acc, key1 := a.NewAccount("premium", "entities:read")
		key2 := a.NewKey(acc, "queues:write")
		a.APIWith(key1, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil)
		a.Admin(http.MethodPut, "/admin/v1/accounts/"+acc+"/plan", map[string]any{"plan": "free"}, nil)
		// The first request after the admin call's answer sees the downgrade
		// (issue 14): the plan change clears the authentication cache.
		pfErr(t, a.APIWith(key1, http.MethodGet, "/entities", nil), 402, "PREMIUM_REQUIRED")
		pfErr(t, a.APIWith(key2, http.MethodGet, "/queues", nil), 402, "PREMIUM_REQUIRED")
		// The keys were kept; back on premium they work again, at once.
		var keys struct{ Data []struct{ ID string } }
		a.Admin(http.MethodGet, "/admin/v1/accounts/"+acc+"/api-keys", nil, &keys)
		if len(keys.Data) != 2 {
			t.Fatalf("a downgrade keeps the keys: %+v", keys)
		}
		a.Admin(http.MethodPut, "/admin/v1/accounts/"+acc+"/plan", map[string]any{"plan": "premium"}, nil)
		a.APIWith(key2, http.MethodGet, "/queues", nil).Must(http.StatusOK, nil)
	})
	t.Run("402 creating a key for an account not on premium", func(t *testing.T) {
		var acc struct{ ID string }
		a.Admin(http.MethodPost, "/admin/v1/accounts", map[string]any{"name": "Free", "plan": "free"}, &acc)
		r := a.Do(http.MethodPost, "/admin/v1/accounts/"+acc.ID+"/api-keys", map[string]any{"scopes": []string{"queues:read"}},
			map[string]string{"Authorization": "Bearer " + apptest.AdminToken})
		pfErr(t, r, 402, "PREMIUM_REQUIRED")
		var keys struct{ Data []struct{ ID string } }
		a.Admin(http.MethodGet, "/admin/v1/accounts/"+acc.ID+"/api-keys", nil, &keys)
		if len(keys.Data) != 0 {
			t.Fatalf("no key may be made: %+v", keys)
		}
	})
	t.Run("admin API needs the bearer token", func(t *testing.T) {
		pfErr(t, a.Do(http.MethodPost, "/admin/v1/accounts", map[string]any{"name": "X", "plan": "premium"}, nil), 401, "UNAUTHORIZED")
		pfErr(t, a.Do(http.MethodGet, "/admin/v1/accounts/"+a.AccountID, nil, map[string]string{"Authorization": "Bearer wrong"}), 401, "UNAUTHORIZED")
		pfErr(t, a.Do(http.MethodGet, "/admin/v1/accounts/"+a.AccountID, nil, map[string]string{"X-API-Key": a.Key}), 401, "UNAUTHORIZED")
	})
	t.Run("admin API refuses unknown scopes", func(t *testing.T) {
		r := a.Do(http.MethodPost, "/admin/v1/accounts/"+a.AccountID+"/api-keys", map[string]any{"scopes": []string{"queues:read", "dispatch:read"}},
			map[string]string{"Authorization": "Bearer " + apptest.AdminToken})
		pfWantFields(t, r, "scopes[1] scope")
	})
}

func TestScopeMatrix(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Centro")
	scope := func(t *testing.T, r *apptest.Response, want string) {
		t.Helper()
		env := pfErr(t, r, 403, "INSUFFICIENT_SCOPE")
		if env.Error.Details["requiredScope"] != want || !strings.Contains(env.Error.Message, want) {
			t.Errorf("want the scope %s named: %s", want, r.Body)
		}
		pfRateHeaders(t, r)
	}
	key := func(scopes string) string { return a.NewKey(a.AccountID, scopes) }

	read := key("entities:read,queues:read")
	a.APIWith(read, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil)
	a.APIWith(read, http.MethodGet, "/queues", nil).Must(http.StatusOK, nil)
	scope(t, a.APIWith(read, http.MethodPost, "/entities", map[string]any{"name": "Centro"}), "entities:write")
	scope(t, a.APIWith(read, http.MethodPatch, "/entities/"+ent, map[string]any{"name": "Centro"}), "entities:write")
	scope(t, a.APIWith(read, http.MethodDelete, "/entities/"+ent, nil), "entities:write")
	scope(t, a.APIWith(read, http.MethodPost, "/queues", map[string]any{}), "queues:write")

	write := key("entities:write")
	a.APIWith(write, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil) // write includes read
	a.APIWith(write, http.MethodPost, "/entities", map[string]any{"name": "Norte"}).Must(http.StatusCreated, nil)
	scope(t, a.APIWith(write, http.MethodGet, "/queues", nil), "queues:read") // of the same module only

	dispatch := key("dispatch:write") // write only: it reads nothing
	scope(t, a.APIWith(dispatch, http.MethodGet, "/queues", nil), "queues:read")
	scope(t, a.APIWith(dispatch, http.MethodGet, "/entities", nil), "entities:read")
}

// TestEveryOperationRequiresItsDocumentedScope walks the document: each
// API-key operation is refused, before anything else, to a key without the
// scope it names, with 403 naming exactly that scope; a key with only that
// scope gets past the check.
func TestEveryOperationRequiresItsDocumentedScope(t *testing.T) {
	a := pfMemory(t)
	doc := openapitest.MustLoad()
	ops := doc.Operations()
	if len(ops) < 10 {
		t.Fatalf("only %d operations", len(ops))
	}
	keys := map[string]string{}
	keyFor := func(scope string) string {
		if keys[scope] == "" {
			keys[scope] = a.NewKey(a.AccountID, scope)
		}
		return keys[scope]
	}
	for _, op := range ops {
		if op.Scope == "" {
			continue
		}
		path := strings.TrimPrefix(op.Path, "/api/v1")
		for _, p := range op.PathParams {
			path = strings.ReplaceAll(path, "{"+p+"}", "nope_0")
		}
		t.Run(op.Method+" "+op.Path, func(t *testing.T) {
			other := "analytics:read"
			if op.Scope == other {
				other = "webhooks:read"
			}
			r := a.APIWith(keyFor(other), op.Method, path, nil)
			env := pfErr(t, r, 403, "INSUFFICIENT_SCOPE")
			if env.Error.Details["requiredScope"] != op.Scope {
				t.Errorf("the document names %s, the server %v", op.Scope, env.Error.Details["requiredScope"])
			}
			r = a.APIWith(keyFor(op.Scope), op.Method, path, nil)
			if r.ErrorCode() == "INSUFFICIENT_SCOPE" {
				t.Errorf("a key holding %s is refused: %s", op.Scope, r.Body)
			}
		})
	}
}

// TestForeignResources: another account's resources are 403, and nothing
// of them is in the body.
func TestForeignResources(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Sucursal Secreta")
	q := pfQueueIn(t, a, ent, map[string]any{"name": "Cola Secreta", "stations": []any{map[string]any{"label": "Ventanilla Secreta"}}})
	run, station := q.Runs[0].ID, q.Stations[0].ID
	_, other := a.NewAccount("premium", "all")

	leaks := []string{ent, q.ID, run, station, "Secreta"}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPatch, "/entities/" + ent, map[string]any{"name": "Mía"}},
		{http.MethodDelete, "/entities/" + ent, nil},
		{http.MethodPost, "/queues", map[string]any{"entityId": ent, "name": "Intrusa", "type": "TURN"}},
		{http.MethodGet, "/queues/" + q.ID, nil},
		{http.MethodPut, "/queues/" + q.ID + "/sla", map[string]any{"maxWaitMinutes": 1}},
		{http.MethodPut, "/queues/" + q.ID + "/dispatch-flow", map[string]any{"allowReopen": true}},
		{http.MethodPut, "/queues/" + q.ID + "/whatsapp-capture", map[string]any{"whatsappCapture": false}},
		{http.MethodPut, "/queues/" + q.ID + "/numbering-reset", map[string]any{"resetNumberingDaily": true}},
		{http.MethodPut, "/queues/" + q.ID + "/cancellation-policy", map[string]any{"minNoticeMinutes": 5}},
		{http.MethodGet, "/queues/" + q.ID + "/stations", nil},
		{http.MethodPost, "/queues/" + q.ID + "/stations", map[string]any{"label": "Mía"}},
		{http.MethodDelete, "/stations/" + station, nil},
		{http.MethodPost, "/queue-runs/" + run + "/open", nil},
		{http.MethodPost, "/queue-runs/" + run + "/close", nil},
		{http.MethodPost, "/queue-runs/" + run + "/close-intake", nil},
		{http.MethodPost, "/queue-runs/" + run + "/open-intake", nil},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			r := a.APIWith(other, c.method, c.path, c.body)
			pfErr(t, r, 403, "FORBIDDEN")
			for _, l := range leaks {
				if strings.Contains(string(r.Body), l) {
					t.Errorf("the body leaks %q: %s", l, r.Body)
				}
			}
		})
	}
	// Nothing changed, and the owner still sees it all.
	var got client.QueueView
	a.API(http.MethodGet, "/queues/"+q.ID, nil).Must(http.StatusOK, &got)
	if len(got.Stations) != 1 || got.Runs[0].Status != "OPEN" || !got.Runs[0].IntakeOpen {
		t.Errorf("the foreign calls changed the queue: %+v", got)
	}
	// A list filtered by a foreign entity shows nothing of it.
	var page struct{ Data []any }
	a.APIWith(other, http.MethodGet, "/queues?entityId="+ent, nil).Must(http.StatusOK, &page)
	if len(page.Data) != 0 {
		t.Errorf("foreign queues listed: %v", page.Data)
	}
}

// ---- the published document ----

func TestOpenAPIDocumentNeedsNoKey(t *testing.T) {
	a := pfMemory(t)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	a.Do(http.MethodGet, "/api/v1/openapi.json", nil, nil).Must(http.StatusOK, &doc)
	if doc.OpenAPI != "3.1.0" || doc.Paths["/api/v1/queues"]["post"] == nil || doc.Paths["/admin/v1/accounts"]["post"] == nil {
		t.Errorf("openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
}
