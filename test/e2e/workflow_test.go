package e2e

import (
	"net/http"
	"testing"

	"github.com/qms-dev/qms/test/apptest"
)

func TestQueueLinksOverHTTP(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		_, q1, _ := setupQueue(t, a, nil)
		_, q2, _ := setupQueue(t, a, nil)

		var l map[string]any
		a.API(http.MethodPost, "/queue-links", map[string]any{
			"fromQueueDefinitionId": q1, "toQueueDefinitionId": q2,
			"conditions": []any{map[string]any{"source": "answer", "key": "reason", "operator": "eq", "value": "parcel"}},
		}).Must(http.StatusCreated, &l)
		if l["trigger"] != "complete" || l["keepNumber"] != false || l["keepFormResponse"] != false || len(l["conditions"].([]any)) != 1 {
			t.Fatalf("created: %v", l)
		}
		id := l["id"].(string)

		// PATCH changes what it names and nothing else.
		var p map[string]any
		a.API(http.MethodPatch, "/queue-links/"+id, map[string]any{
			"fromQueueDefinitionId": q1, "toQueueDefinitionId": q2, "keepNumber": true,
		}).Must(http.StatusOK, &p)
		if p["keepNumber"] != true || p["trigger"] != "complete" || len(p["conditions"].([]any)) != 1 {
			t.Fatalf("patched: %v", p)
		}
		a.API(http.MethodPatch, "/queue-links/"+id, map[string]any{
			"fromQueueDefinitionId": q1, "toQueueDefinitionId": q2, "trigger": "manual", "conditions": []any{},
		}).Must(http.StatusOK, &p)
		if p["keepNumber"] != true || p["trigger"] != "manual" || len(p["conditions"].([]any)) != 0 {
			t.Fatalf("patched again: %v", p)
		}
		for _, c := range []struct {
			body map[string]any
			want int
			code string
		}{
			{map[string]any{"keepNumber": false}, 400, "VALIDATION_ERROR"}, // queue ids are required on PATCH
			{map[string]any{"fromQueueDefinitionId": q1, "toQueueDefinitionId": q1}, 400, "VALIDATION_ERROR"},
			{map[string]any{"fromQueueDefinitionId": q1, "toQueueDefinitionId": q2, "trigger": "auto"}, 400, "VALIDATION_ERROR"},
			{map[string]any{"fromQueueDefinitionId": q1, "toQueueDefinitionId": q2, "keepNumber": nil}, 400, "VALIDATION_ERROR"},
			{map[string]any{"fromQueueDefinitionId": q1, "toQueueDefinitionId": "que_nope"}, 422, "QUEUE_NOT_FOUND"},
		} {
			if r := a.API(http.MethodPatch, "/queue-links/"+id, c.body); r.Status != c.want || r.ErrorCode() != c.code {
				t.Errorf("PATCH %v: %d %s", c.body, r.Status, r.Body)
			}
		}
		for _, c := range []struct {
			body map[string]any
			want int
			code string
		}{
			{map[string]any{"fromQueueDefinitionId": q1}, 400, "VALIDATION_ERROR"},
			{map[string]any{"fromQueueDefinitionId": q1, "toQueueDefinitionId": q1}, 400, "VALIDATION_ERROR"},
			{map[string]any{"fromQueueDefinitionId": q1, "toQueueDefinitionId": q2, "conditions": []any{map[string]any{"source": "answer", "operator": "eq", "value": "x"}}}, 400, "VALIDATION_ERROR"},
			{map[string]any{"fromQueueDefinitionId": q1, "toQueueDefinitionId": q2, "extra": true}, 400, "VALIDATION_ERROR"},
			{map[string]any{"fromQueueDefinitionId": "que_nope", "toQueueDefinitionId": q2}, 422, "QUEUE_NOT_FOUND"},
		} {
			if r := a.API(http.MethodPost, "/queue-links", c.body); r.Status != c.want || r.ErrorCode() != c.code {
				t.Errorf("POST %v: %d %s", c.body, r.Status, r.Body)
			}
		}

		// Another account can neither see nor use these queues or links.
		_, other := a.NewAccount("premium", "workflow:write,queues:write,entities:write")
		var oe struct{ ID string }
		a.APIWith(other, http.MethodPost, "/entities", map[string]any{"name": "Other"}).Must(http.StatusCreated, &oe)
		var oq struct{ ID string }
		a.APIWith(other, http.MethodPost, "/queues", map[string]any{"entityId": oe.ID, "name": "Other", "type": "TURN"}).Must(http.StatusCreated, &oq)
		if r := a.APIWith(other, http.MethodPost, "/queue-links", map[string]any{"fromQueueDefinitionId": oq.ID, "toQueueDefinitionId": q2}); r.Status != http.StatusForbidden {
			t.Errorf("link to another account's queue: %d %s", r.Status, r.Body)
		}
		if r := a.APIWith(other, http.MethodDelete, "/queue-links/"+id, nil); r.Status != http.StatusForbidden {
			t.Errorf("delete another account's link: %d", r.Status)
		}
		_, readOnly := a.NewAccount("premium", "workflow:read")
		if r := a.APIWith(readOnly, http.MethodPost, "/queue-links", map[string]any{"fromQueueDefinitionId": q1, "toQueueDefinitionId": q2}); r.Status != http.StatusForbidden {
			t.Errorf("read-only key creates: %d", r.Status)
		}

		var page struct{ Data []map[string]any }
		a.API(http.MethodGet, "/queue-links", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 {
			t.Fatalf("list: %d", len(page.Data))
		}
		a.API(http.MethodDelete, "/queue-links/"+id, nil).Must(http.StatusOK, nil)
		if r := a.API(http.MethodGet, "/queue-links/"+id, nil); r.Status != http.StatusNotFound {
			t.Fatalf("after delete: %d", r.Status)
		}
	})
}
