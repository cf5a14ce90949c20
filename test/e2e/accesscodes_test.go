package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// setupQueue creates an entity and a TURN queue through the API and returns
// their ids and the queue's open run.
func setupQueue(t testing.TB, a *apptest.App, body map[string]any) (entityID, queueID, runID string) {
	t.Helper()
	var e client.Entity
	a.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
	q := map[string]any{"entityId": e.ID, "name": "Front desk", "type": "TURN"}
	for k, v := range body {
		q[k] = v
	}
	var out client.QueueView
	a.API(http.MethodPost, "/queues", q).Must(http.StatusCreated, &out)
	return e.ID, out.ID, out.Runs[0].ID
}

func TestAccessCodesOverHTTP(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		entityID, queueID, _ := setupQueue(t, a, nil)

		var c map[string]any
		a.API(http.MethodPost, "/access-codes", map[string]any{
			"code": "VIP-001", "scopeType": "queue", "scopeId": queueID, "maxUses": 5,
			"expiresAt": "2030-01-01T00:00:00Z", "prefix": "V", "classification": "gold", "priority": "HIGH",
			"properties": map[string]any{"plate": "ABC-123", "seats": 4},
		}).Must(http.StatusCreated, &c)
		if c["enabled"] != true || c["uses"] != 0.0 || c["scopeId"] != queueID || c["priority"] != "HIGH" {
			t.Fatalf("created: %v", c)
		}
		id := c["id"].(string)

		// Duplicate: its own code, 409.
		if r := a.API(http.MethodPost, "/access-codes", map[string]any{"code": "VIP-001"}); r.Status != http.StatusConflict || r.ErrorCode() != "ACCESS_CODE_DUPLICATE" {
			t.Fatalf("duplicate: %d %s", r.Status, r.Body)
		}
		// Strict body and bounds.
		for _, body := range []any{
			map[string]any{"code": "X", "unknown": 1},
			map[string]any{"code": ""},
			map[string]any{"code": "X", "maxUses": 0},
			map[string]any{"code": "X", "scopeType": "entity"},
			map[string]any{"code": "X", "expiresAt": "tomorrow"},
		} {
			if r := a.API(http.MethodPost, "/access-codes", body); r.Status != http.StatusBadRequest || r.ErrorCode() != "VALIDATION_ERROR" {
				t.Errorf("%v: %d %s", body, r.Status, r.Body)
			}
		}
		if r := a.API(http.MethodPost, "/access-codes", map[string]any{"code": "E1", "scopeType": "entity", "scopeId": "ent_nope"}); r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "ACCESS_CODE_SCOPE_NOT_FOUND" {
			t.Fatalf("unknown scope: %d %s", r.Status, r.Body)
		}

		// Bulk: all or nothing, failures by index.
		r := a.API(http.MethodPost, "/access-codes/bulk", map[string]any{"codes": []any{
			map[string]any{"code": "B1"},
			map[string]any{"code": "VIP-001"},
			map[string]any{"code": "B1"},
			map[string]any{"code": "B2", "scopeType": "entity", "scopeId": entityID},
		}})
		if r.Status != http.StatusConflict || r.ErrorCode() != "ACCESS_CODE_DUPLICATE" {
			t.Fatalf("bulk with duplicates: %d %s", r.Status, r.Body)
		}
		var env struct {
			Error struct {
				Details struct {
					Items []struct {
						Index int
						Path  string
						Code  string
					}
				}
			}
		}
		r.Decode(&env)
		if items := env.Error.Details.Items; len(items) != 2 || items[0].Index != 1 || items[1].Index != 2 || items[1].Path != "codes[2].code" {
			t.Fatalf("bulk items: %+v", items)
		}
		r = a.API(http.MethodPost, "/access-codes/bulk", map[string]any{"codes": []any{map[string]any{"code": "ok"}, map[string]any{"code": "x", "priority": "URGENT"}}})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "codes[1].priority") {
			t.Fatalf("bulk validation: %d %s", r.Status, r.Body)
		}
		var page client.AccessCodePage
		a.API(http.MethodGet, "/access-codes", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 {
			t.Fatalf("refused bulks created codes: %d", len(page.Data))
		}
		codes := make([]any, 60)
		for i := range codes {
			codes[i] = map[string]any{"code": fmt.Sprintf("BULK-%02d", i), "scopeType": "entity", "scopeId": entityID}
		}
		var bulk client.CreateAccessCodesInBulkResponse
		a.API(http.MethodPost, "/access-codes/bulk", map[string]any{"codes": codes}).Must(http.StatusCreated, &bulk)
		if bulk.Count != 60 || bulk.Data[59].Code != "BULK-59" {
			t.Fatalf("bulk: %d", bulk.Count)
		}
		a.API(http.MethodGet, "/access-codes?limit=50", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 50 || page.Pagination.NextCursor == nil {
			t.Fatalf("page 1: %d", len(page.Data))
		}
		a.API(http.MethodGet, "/access-codes?limit=50&cursor="+*page.Pagination.NextCursor, nil).Must(http.StatusOK, &page)
		if len(page.Data) != 11 || page.Pagination.NextCursor != nil {
			t.Fatalf("page 2: %d", len(page.Data))
		}

		// Disable, twice.
		var d map[string]any
		a.API(http.MethodPost, "/access-codes/"+id+"/disable", nil).Must(http.StatusCreated, &d)
		if d["enabled"] != false || d["disabledAt"] == nil {
			t.Fatalf("disabled: %v", d)
		}
		a.API(http.MethodPost, "/access-codes/"+id+"/disable", nil).Must(http.StatusCreated, nil)

		// Scopes and accounts.
		_, readOnly := a.NewAccount("premium", "access-codes:read")
		if r := a.APIWith(readOnly, http.MethodPost, "/access-codes", map[string]any{"code": "Z"}); r.Status != http.StatusForbidden {
			t.Fatalf("read-only key writes: %d %s", r.Status, r.Body)
		}
		_, otherKey := a.NewAccount("premium", "access-codes:write")
		if r := a.APIWith(otherKey, http.MethodPost, "/access-codes/"+id+"/disable", nil); r.Status != http.StatusForbidden {
			t.Fatalf("other account disables: %d %s", r.Status, r.Body)
		}
		if r := a.APIWith(otherKey, http.MethodPost, "/access-codes", map[string]any{"code": "Q", "scopeType": "queue", "scopeId": queueID}); r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "ACCESS_CODE_SCOPE_NOT_FOUND" {
			t.Fatalf("other account scopes to our queue: %d %s", r.Status, r.Body)
		}
		if r := a.API(http.MethodPost, "/access-codes/acd_nope/disable", nil); r.Status != http.StatusNotFound {
			t.Fatalf("missing: %d", r.Status)
		}
	})
}
