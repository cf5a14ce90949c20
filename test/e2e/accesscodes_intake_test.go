package e2e

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
)

// takeTurn posts a turn and returns the response.
func takeTurn(a *apptest.App, runID string, body map[string]any) *apptest.Response {
	return a.API(http.MethodPost, "/queue-runs/"+runID+"/turns", body)
}

func TestAccessCodeAtIntake(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		entityID, queueID, runID := setupQueue(t, a, map[string]any{
			"accessCodeRequired": true, "turnPrefix": "A", "turnPadding": 3,
			"carpool": map[string]any{"enabled": true, "oneActiveTurnPerCode": true},
		})
		_, otherQueue, _ := setupQueue(t, a, nil)
		mk := func(body map[string]any) string {
			var c struct{ ID string }
			a.API(http.MethodPost, "/access-codes", body).Must(http.StatusCreated, &c)
			return c.ID
		}
		vipID := mk(map[string]any{"code": "VIP", "prefix": "V", "priority": "VERY_HIGH", "classification": "gold",
			"properties": map[string]any{"plate": "ABC-123"}, "scopeType": "entity", "scopeId": entityID})
		mk(map[string]any{"code": "PLAIN", "scopeType": "queue", "scopeId": queueID})
		mk(map[string]any{"code": "ELSEWHERE", "scopeType": "queue", "scopeId": otherQueue})
		mk(map[string]any{"code": "OLD", "expiresAt": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
		mk(map[string]any{"code": "ONCE", "maxUses": 1})
		offID := mk(map[string]any{"code": "OFF"})
		a.API(http.MethodPost, "/access-codes/"+offID+"/disable", nil).Must(http.StatusCreated, nil)

		for _, c := range []struct {
			body   map[string]any
			status int
			code   string
		}{
			{map[string]any{}, 422, "ACCESS_CODE_REQUIRED"},
			{map[string]any{"accessCode": "NOPE"}, 422, "ACCESS_CODE_UNKNOWN"},
			{map[string]any{"accessCode": "OFF"}, 422, "ACCESS_CODE_DISABLED"},
			{map[string]any{"accessCode": "ELSEWHERE"}, 422, "ACCESS_CODE_OUT_OF_SCOPE"},
			{map[string]any{"accessCode": "OLD"}, 422, "ACCESS_CODE_EXPIRED"},
			{map[string]any{"accessCode": ""}, 400, "VALIDATION_ERROR"},
			{map[string]any{"accessCode": 7}, 400, "VALIDATION_ERROR"},
		} {
			if r := takeTurn(a, runID, c.body); r.Status != c.status || r.ErrorCode() != c.code {
				t.Errorf("%v: %d %s", c.body, r.Status, r.Body)
			}
		}

		// The code's prefix and priority apply; classification and
		// properties are kept with the turn.
		var turn struct {
			ID          string
			DisplayCode string
			Priority    string
		}
		takeTurn(a, runID, map[string]any{"accessCode": "VIP", "idempotencyKey": "vip-turn-1"}).Must(http.StatusCreated, &turn)
		if turn.DisplayCode != "V001" || turn.Priority != "VERY_HIGH" {
			t.Fatalf("VIP turn: %+v", turn)
		}
		var tc map[string]any
		a.API(http.MethodGet, "/turns/"+turn.ID+"/access-code", nil).Must(http.StatusOK, &tc)
		if tc["accessCodeId"] != vipID || tc["classification"] != "gold" || tc["properties"].(map[string]any)["plate"] != "ABC-123" {
			t.Fatalf("turn's code: %v", tc)
		}
		// A replay of the same request is the same turn and takes no use.
		var again struct{ ID string }
		takeTurn(a, runID, map[string]any{"accessCode": "VIP", "idempotencyKey": "vip-turn-1"}).Must(http.StatusCreated, &again)
		if again.ID != turn.ID {
			t.Fatalf("replay made another turn")
		}
		var vip struct{ Uses int }
		a.API(http.MethodGet, "/access-codes/"+vipID, nil).Must(http.StatusOK, &vip)
		if vip.Uses != 1 {
			t.Fatalf("VIP uses: %d", vip.Uses)
		}

		// carpool.oneActiveTurnPerCode: one pending turn per code.
		if r := takeTurn(a, runID, map[string]any{"accessCode": "VIP"}); r.Status != http.StatusConflict || r.ErrorCode() != "ACCESS_CODE_IN_USE" {
			t.Fatalf("second active turn: %d %s", r.Status, r.Body)
		}
		a.API(http.MethodPost, "/turns/"+turn.ID+"/cancel", nil).Must(http.StatusCreated, nil)
		var second struct{ DisplayCode string }
		takeTurn(a, runID, map[string]any{"accessCode": "VIP"}).Must(http.StatusCreated, &second)
		a.API(http.MethodGet, "/access-codes/"+vipID, nil).Must(http.StatusOK, &vip)
		if vip.Uses != 2 {
			t.Fatalf("VIP uses after the refused and the accepted turn: %d", vip.Uses)
		}
		// A code without prefix or priority leaves the queue's.
		var plain struct {
			DisplayCode string
			Priority    string
		}
		takeTurn(a, runID, map[string]any{"accessCode": "PLAIN"}).Must(http.StatusCreated, &plain)
		if plain.Priority != "NORMAL" || plain.DisplayCode[0] != 'A' {
			t.Fatalf("plain turn: %+v", plain)
		}

		takeTurn(a, runID, map[string]any{"accessCode": "ONCE"}).Must(http.StatusCreated, nil)
		if r := takeTurn(a, runID, map[string]any{"accessCode": "ONCE"}); r.Status != 422 || r.ErrorCode() != "ACCESS_CODE_EXHAUSTED" {
			t.Fatalf("exhausted: %d %s", r.Status, r.Body)
		}
		// A turn of a queue without accessCodeRequired needs none, and
		// the turn without code has no code record.
		_, _, freeRun := setupQueue(t, a, nil)
		var free struct{ ID string }
		takeTurn(a, freeRun, map[string]any{}).Must(http.StatusCreated, &free)
		if r := a.API(http.MethodGet, "/turns/"+free.ID+"/access-code", nil); r.Status != http.StatusNotFound {
			t.Fatalf("turn without a code: %d", r.Status)
		}
	})
}

// TestAccessCodeLastUseUnderConcurrentIntake: a code with maxUses 1 and 20
// customers taking a turn with it at once, on Postgres: exactly one turn.
func TestAccessCodeLastUseUnderConcurrentIntake(t *testing.T) {
	a := apptest.Postgres(t)
	_, _, runID := setupQueue(t, a, map[string]any{"accessCodeRequired": true})
	a.API(http.MethodPost, "/access-codes", map[string]any{"code": "LAST", "maxUses": 1}).Must(http.StatusCreated, nil)
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	codes := make([]string, 20)
	start := make(chan struct{})
	for i := range statuses {
		wg.Go(func() {
			<-start
			r := takeTurn(a, runID, map[string]any{"accessCode": "LAST"})
			statuses[i], codes[i] = r.Status, r.ErrorCode()
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i, s := range statuses {
		switch {
		case s == http.StatusCreated:
			created++
		case s != http.StatusUnprocessableEntity || codes[i] != "ACCESS_CODE_EXHAUSTED":
			t.Errorf("taker %d: %d %s", i, s, codes[i])
		}
	}
	var page struct{ Data []any }
	a.API(http.MethodGet, "/queue-runs/"+runID+"/turns", nil).Must(http.StatusOK, &page)
	if created != 1 || len(page.Data) != 1 {
		t.Fatalf("20 takers of one use: %d created, %d turns in the run", created, len(page.Data))
	}
}

// TestOneActiveTurnPerCodeHoldsOnReturn: carpool.oneActiveTurnPerCode
// holds when a finished turn comes back, by reopen or by a no-show's
// re-entry, not only at intake.
func TestOneActiveTurnPerCodeHoldsOnReturn(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		_, _, runID := setupQueue(t, a, map[string]any{
			"carpool":      map[string]any{"enabled": true, "oneActiveTurnPerCode": true},
			"dispatchFlow": map[string]any{"allowReopen": true, "trackService": false},
		})
		a.API(http.MethodPost, "/access-codes", map[string]any{"code": "CAR"}).Must(http.StatusCreated, nil)
		var first, second, third struct{ ID string }
		takeTurn(a, runID, map[string]any{"accessCode": "CAR"}).Must(http.StatusCreated, &first)
		a.API(http.MethodPost, "/turns/"+first.ID+"/cancel", nil).Must(http.StatusCreated, nil)
		takeTurn(a, runID, map[string]any{"accessCode": "CAR"}).Must(http.StatusCreated, &second)
		if r := a.API(http.MethodPost, "/turns/"+first.ID+"/reopen", nil); r.Status != http.StatusConflict || r.ErrorCode() != "ACCESS_CODE_IN_USE" {
			t.Fatalf("reopen while the code has another active turn: %d %s", r.Status, r.Body)
		}
		// The second turn misses its call; a third takes the code; the
		// second's late arrival may not bring back a second active turn.
		a.API(http.MethodPost, "/turns/"+second.ID+"/call", nil).Must(http.StatusCreated, nil)
		a.API(http.MethodPost, "/turns/"+second.ID+"/no-show", nil).Must(http.StatusCreated, nil)
		takeTurn(a, runID, map[string]any{"accessCode": "CAR"}).Must(http.StatusCreated, &third)
		if r := a.API(http.MethodPost, "/turns/"+second.ID+"/arrive", nil); r.Status != http.StatusConflict || r.ErrorCode() != "ACCESS_CODE_IN_USE" {
			t.Fatalf("re-entry while the code has another active turn: %d %s", r.Status, r.Body)
		}
		// Once the third is done, the second may come back.
		a.API(http.MethodPost, "/turns/"+third.ID+"/cancel", nil).Must(http.StatusCreated, nil)
		var back struct{ Status string }
		a.API(http.MethodPost, "/turns/"+second.ID+"/arrive", nil).Must(http.StatusCreated, &back)
		if back.Status != "WAITING" {
			t.Fatalf("re-entry with the code free: %s", back.Status)
		}
	})
}
