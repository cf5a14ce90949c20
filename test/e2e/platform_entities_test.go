package e2e

// Entities end to end: their strict bodies and the cascade to their queues.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// ---- entities ----

func TestEntitiesEndToEnd(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		full := map[string]any{
			"name": "Centro", "description": "Sede central", "websiteUrl": "https://example.com/centro",
			"supportEmail": "ayuda@example.com", "supportPhone": "+34 600-123-456",
			"location": map[string]any{"lat": 40.4168, "lng": -3.7038, "shortAddress": "Sol 1", "accuracyMeters": 3.5,
				"name": "Sol", "fullAddress": "Puerta del Sol 1, Madrid", "timezone": "Europe/Madrid"},
		}
		var e map[string]any
		a.API(http.MethodPost, "/entities", full).Must(http.StatusCreated, &e)
		pfSubset(t, "entity", e, pfJSON(full))
		id := e["id"].(string)
		if !strings.HasPrefix(id, "ent_") {
			t.Errorf("id %q", id)
		}

		var page client.EntityPage
		a.API(http.MethodGet, "/entities", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 || page.Data[0].ID != id || page.Pagination.Limit != 50 || page.Pagination.NextCursor != nil {
			t.Errorf("list: %+v", page)
		}

		// PATCH changes what it names, keeps the rest, and null clears.
		var p map[string]any
		a.API(http.MethodPatch, "/entities/"+id, map[string]any{"name": "Centro Sol"}).Must(http.StatusOK, &p)
		want := pfJSON(full).(map[string]any)
		want["name"] = "Centro Sol"
		pfSubset(t, "patched", p, want)
		a.API(http.MethodPatch, "/entities/"+id, `{"description":null,"websiteUrl":null,"supportEmail":null,"supportPhone":null}`).Must(http.StatusOK, &p)
		for _, k := range []string{"description", "websiteUrl", "supportEmail", "supportPhone"} {
			if v, ok := p[k]; !ok || v != nil {
				t.Errorf("%s not cleared: %v", k, p[k])
			}
		}
		if p["name"] != "Centro Sol" || p["location"] == nil {
			t.Errorf("cleared too much: %v", p)
		}
		a.API(http.MethodPatch, "/entities/"+id, map[string]any{"description": "De nuevo"}).Must(http.StatusOK, &p)
		if p["description"] != "De nuevo" {
			t.Errorf("description %v", p["description"])
		}
		pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, `{"name":null}`), "name not_null")
		pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, `{"location":null}`), "location not_null")
		pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, map[string]any{"supportEmail": "nope"}), "supportEmail email")
		// The stored entity is compared as raw JSON, member by member.
		var again struct{ Data []map[string]any }
		a.API(http.MethodGet, "/entities", nil).Must(http.StatusOK, &again)
		pfSubset(t, "stored", again.Data[0], pfDropTimes(p))

		pfErr(t, a.API(http.MethodPatch, "/entities/ent_00000000000000000000000000", map[string]any{"name": "X1"}), 404, "NOT_FOUND")
	})
}

// TestEntityPatchIsStrictAtDepth: the PATCH body's nested location is as
// strict as the create body's (issue 2, section 2: unknown properties at
// any depth, keys case-sensitive).
func TestEntityPatchIsStrictAtDepth(t *testing.T) {
	a := pfMemory(t)
	id := pfEntity(t, a, "Centro")
	pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, `{"location":{"lat":1,"lng":2,"shortAddress":"abc","colour":"red"}}`),
		"location.colour unknown_field")
	pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, `{"location":{"LAT":1,"lng":2,"shortAddress":"abc"}}`),
		"location.LAT unknown_field")
}

// TestQuestionOptionsAreStrict: an option object is a body like any other.
func TestQuestionOptionsAreStrict(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Centro")
	opts := func(o string) string {
		return `{"entityId":"` + ent + `","name":"Caja","type":"TURN","preAttention":{"questions":[{"id":"q","label":"L","type":"choice","options":[` + o + `]}]}}`
	}
	pfWantFields(t, a.API(http.MethodPost, "/queues", opts(`{"label":"a","colour":"red"}`)), "preAttention.questions[0].options[0].colour unknown_field")
	pfWantFields(t, a.API(http.MethodPost, "/queues", opts(`{"LABEL":"a"}`)), "preAttention.questions[0].options[0].LABEL unknown_field")
}

func TestDeletingAnEntityDeletesItsQueues(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		ent, keep := pfEntity(t, a, "Se va"), pfEntity(t, a, "Se queda")
		q1 := pfQueueIn(t, a, ent, map[string]any{"stations": []any{map[string]any{"label": "A"}}})
		q2 := pfQueueIn(t, a, ent, nil)
		q3 := pfQueueIn(t, a, keep, nil)
		a.API(http.MethodPost, "/queue-runs/"+q2.Runs[0].ID+"/close", nil).Must(http.StatusCreated, nil)

		var del map[string]any
		a.API(http.MethodDelete, "/entities/"+ent, nil).Must(http.StatusOK, &del)
		if del["id"] != ent || del["deleted"] != true {
			t.Errorf("delete answered %v", del)
		}
		for _, q := range []client.QueueView{q1, q2} {
			pfErr(t, a.API(http.MethodGet, "/queues/"+q.ID, nil), 404, "NOT_FOUND")
			pfErr(t, a.API(http.MethodGet, "/queues/"+q.ID+"/stations", nil), 404, "NOT_FOUND")
			pfErr(t, a.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/open", nil), 404, "NOT_FOUND")
		}
		pfErr(t, a.API(http.MethodDelete, "/stations/"+q1.Stations[0].ID, nil), 404, "NOT_FOUND")
		pfErr(t, a.API(http.MethodDelete, "/entities/"+ent, nil), 404, "NOT_FOUND")
		var page client.QueuePage
		a.API(http.MethodGet, "/queues", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 || page.Data[0].ID != q3.ID {
			t.Errorf("queues left: %+v", page.Data)
		}
		a.API(http.MethodGet, "/queues?entityId="+ent, nil).Must(http.StatusOK, &page)
		if len(page.Data) != 0 {
			t.Errorf("queues of the deleted entity: %+v", page.Data)
		}
		a.API(http.MethodGet, "/queues/"+q3.ID, nil).Must(http.StatusOK, nil)
	})
}
