package e2e

import (
	"net/http"
	"testing"

	"github.com/qms-dev/qms/test/apptest"
)

// TestCursorsBoundToTheirQuery (issue 14): a cursor continues only the list,
// path and filters that made it; with another run, entityId or status it is
// 400 INVALID_CURSOR, while the limit may change from page to page.
func TestCursorsBoundToTheirQuery(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		type page struct {
			Pagination struct{ NextCursor *string }
		}
		cursorOf := func(path string) string {
			t.Helper()
			var p page
			a.API(http.MethodGet, path, nil).Must(http.StatusOK, &p)
			if p.Pagination.NextCursor == nil {
				t.Fatalf("%s: no next cursor", path)
			}
			return *p.Pagination.NextCursor
		}
		entA, entB := pfEntity(t, a, "Centro A"), pfEntity(t, a, "Centro B")
		q1, q2 := pfQueueIn(t, a, entA, nil), pfQueueIn(t, a, entA, nil)
		pfQueueIn(t, a, entB, nil)
		run1, run2 := q1.Runs[0].ID, q2.Runs[0].ID

		t.Run("entityId", func(t *testing.T) {
			c := cursorOf("/queues?entityId=" + entA + "&limit=1")
			a.API(http.MethodGet, "/queues?limit=5&entityId="+entA+"&cursor="+c, nil).Must(http.StatusOK, nil)
			pfErr(t, a.API(http.MethodGet, "/queues?entityId="+entB+"&cursor="+c, nil), 400, "INVALID_CURSOR")
			pfErr(t, a.API(http.MethodGet, "/queues?cursor="+c, nil), 400, "INVALID_CURSOR")
		})
		t.Run("run of display tokens", func(t *testing.T) {
			for range 2 {
				a.API(http.MethodPost, "/queue-runs/"+run1+"/display-tokens", map[string]any{"label": "Lobby"}).Must(http.StatusCreated, nil)
			}
			c := cursorOf("/queue-runs/" + run1 + "/display-tokens?limit=1")
			a.API(http.MethodGet, "/queue-runs/"+run1+"/display-tokens?cursor="+c, nil).Must(http.StatusOK, nil)
			pfErr(t, a.API(http.MethodGet, "/queue-runs/"+run2+"/display-tokens?cursor="+c, nil), 400, "INVALID_CURSOR")
		})
		t.Run("status of turns", func(t *testing.T) {
			for range 2 {
				a.API(http.MethodPost, "/queue-runs/"+run1+"/turns", map[string]any{}).Must(http.StatusCreated, nil)
			}
			c := cursorOf("/queue-runs/" + run1 + "/turns?status=WAITING&limit=1")
			a.API(http.MethodGet, "/queue-runs/"+run1+"/turns?status=WAITING&cursor="+c, nil).Must(http.StatusOK, nil)
			pfErr(t, a.API(http.MethodGet, "/queue-runs/"+run1+"/turns?status=CALLED&cursor="+c, nil), 400, "INVALID_CURSOR")
			pfErr(t, a.API(http.MethodGet, "/queue-runs/"+run1+"/turns?cursor="+c, nil), 400, "INVALID_CURSOR")
			pfErr(t, a.API(http.MethodGet, "/queue-runs/"+run2+"/turns?status=WAITING&cursor="+c, nil), 400, "INVALID_CURSOR")
		})
	})
}
