package e2e

// Pagination: walking every list, and the refusals of a bad cursor or
// limit.

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// ---- pagination ----

func TestPaginationWalk(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		var existing []string
		for i := range 120 {
			existing = append(existing, pfEntity(t, a, fmt.Sprintf("Sucursal %03d", i)))
		}
		seen := map[string]int{}
		var order []string
		cursor, pages, added := "", 0, 0
		for {
			path := "/entities?limit=7"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			var page client.EntityPage
			a.API(http.MethodGet, path, nil).Must(http.StatusOK, &page)
			pages++
			if page.Pagination.Limit != 7 || len(page.Data) > 7 || (page.Pagination.NextCursor != nil && len(page.Data) != 7) {
				t.Fatalf("page %d: %d items, %+v", pages, len(page.Data), page.Pagination)
			}
			for _, e := range page.Data {
				seen[e.ID]++
				order = append(order, e.ID)
			}
			// Items keep arriving while the walk goes on.
			if pages%3 == 0 && added < 30 {
				for range 3 {
					pfEntity(t, a, fmt.Sprintf("Nueva %d", added))
					added++
				}
			}
			if page.Pagination.NextCursor == nil {
				break
			}
			cursor = *page.Pagination.NextCursor
			if pages > 100 {
				t.Fatal("the walk does not end")
			}
		}
		for _, id := range existing {
			if seen[id] != 1 {
				t.Errorf("%s seen %d times", id, seen[id])
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s repeated %d times", id, n)
			}
		}
		if !slices.IsSorted(order) {
			t.Error("the walk is not in a stable (id) order")
		}
		if len(order) < 120 || pages < 18 {
			t.Errorf("%d items in %d pages", len(order), pages)
		}
	})
}

func TestPaginationRefusals(t *testing.T) {
	a := pfMemory(t)
	for i := range 3 {
		pfEntity(t, a, fmt.Sprintf("Sucursal %d", i))
		pfQueueIn(t, a, pfEntity(t, a, fmt.Sprintf("Cola %d", i)), nil)
	}
	next := func(key, path string) string {
		t.Helper()
		var page struct{ Pagination struct{ NextCursor *string } }
		a.APIWith(key, http.MethodGet, path, nil).Must(http.StatusOK, &page)
		if page.Pagination.NextCursor == nil {
			t.Fatalf("%s: no next page", path)
		}
		return *page.Pagination.NextCursor
	}
	cursor := next(a.Key, "/entities?limit=1")

	t.Run("tampered cursor", func(t *testing.T) {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			t.Fatalf("cursor %q is not base64url: the test needs updating", cursor)
		}
		for _, i := range []int{1, len(raw) / 2, len(raw) - 1} {
			forged := slices.Clone(raw)
			forged[i] ^= 0x01
			env := pfErr(t, a.API(http.MethodGet, "/entities?cursor="+base64.RawURLEncoding.EncodeToString(forged), nil), 400, "INVALID_CURSOR")
			if env.Error.Details["parameter"] != "cursor" {
				t.Errorf("details %v", env.Error.Details)
			}
		}
		for _, c := range []string{"abc", "", "%00", cursor + "A"} {
			pfErr(t, a.API(http.MethodGet, "/entities?cursor="+c, nil), 400, "INVALID_CURSOR")
		}
	})
	t.Run("other account's cursor", func(t *testing.T) {
		_, other := a.NewAccount("premium", "all")
		a.APIWith(other, http.MethodPost, "/entities", map[string]any{"name": "Ajena"}).Must(http.StatusCreated, nil)
		pfErr(t, a.APIWith(other, http.MethodGet, "/entities?cursor="+cursor, nil), 400, "INVALID_CURSOR")
	})
	t.Run("other list's cursor", func(t *testing.T) {
		pfErr(t, a.API(http.MethodGet, "/queues?cursor="+cursor, nil), 400, "INVALID_CURSOR")
		pfErr(t, a.API(http.MethodGet, "/entities?cursor="+next(a.Key, "/queues?limit=1"), nil), 400, "INVALID_CURSOR")
	})
	t.Run("limit out of range", func(t *testing.T) {
		for limit, rule := range map[string]string{"0": "min", "-1": "min", "201": "max", "abc": "type", "1.5": "type", "": "type"} {
			pfWantFields(t, a.API(http.MethodGet, "/entities?limit="+limit, nil), "limit "+rule)
		}
		pfWantFields(t, a.API(http.MethodGet, "/queues?limit=201", nil), "limit max")
		a.API(http.MethodGet, "/entities?limit=1", nil).Must(http.StatusOK, nil)
		a.API(http.MethodGet, "/entities?limit=200", nil).Must(http.StatusOK, nil)
	})
}
