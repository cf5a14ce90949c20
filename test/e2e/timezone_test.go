package e2e

import (
	"net/http"
	"testing"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// TestQueueTakesItsBranchsTimeZone: a queue without location.timezone
// runs on its entity's zone, shows it as timezone, and sees a change of
// the entity's zone at once; its own zone wins when set.
func TestQueueTakesItsBranchsTimeZone(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		var e client.Entity
		loc := func(zone string) map[string]any {
			return map[string]any{"lat": 35.68, "lng": 139.76, "shortAddress": "Chiyoda", "timezone": zone}
		}
		a.API(http.MethodPost, "/entities", map[string]any{"name": "Tokyo branch", "location": loc("Asia/Tokyo")}).
			Must(http.StatusCreated, &e)
		type queue struct {
			ID       string
			Timezone string
		}
		var plain, own queue
		a.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Front", "type": "TURN"}).
			Must(http.StatusCreated, &plain)
		a.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Back", "type": "TURN",
			"location": loc("Europe/Madrid")}).Must(http.StatusCreated, &own)
		if plain.Timezone != "Asia/Tokyo" || own.Timezone != "Europe/Madrid" {
			t.Fatalf("on create: %q %q", plain.Timezone, own.Timezone)
		}
		a.API(http.MethodPatch, "/entities/"+e.ID, map[string]any{"location": loc("America/Lima")}).
			Must(http.StatusOK, nil)
		var got queue
		a.API(http.MethodGet, "/queues/"+plain.ID, nil).Must(http.StatusOK, &got)
		if got.Timezone != "America/Lima" {
			t.Fatalf("after the branch moved: %q", got.Timezone)
		}
		a.API(http.MethodGet, "/queues/"+own.ID, nil).Must(http.StatusOK, &got)
		if got.Timezone != "Europe/Madrid" {
			t.Fatalf("the queue's own zone: %q", got.Timezone)
		}
		var list struct{ Data []queue }
		a.API(http.MethodGet, "/queues?entityId="+e.ID, nil).Must(http.StatusOK, &list)
		for _, q := range list.Data {
			if q.ID == plain.ID && q.Timezone != "America/Lima" {
				t.Fatalf("list: %q", q.Timezone)
			}
		}
	})
}
