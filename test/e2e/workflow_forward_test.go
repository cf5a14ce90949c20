package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// serve calls, starts and completes a waiting turn through the API.
func serve(t testing.TB, a *apptest.App, turnID string) {
	t.Helper()
	for _, op := range []string{"call", "start", "complete"} {
		a.API(http.MethodPost, "/turns/"+turnID+"/"+op, nil).Must(http.StatusCreated, nil)
	}
}

// forwardsOf waits until the turn's forwards are all settled (none
// PENDING) and returns them by link.
func forwardsOf(t testing.TB, a *apptest.App, turnID string, want int) map[string]client.QueueForward {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var page struct{ Data []client.QueueForward }
		a.API(http.MethodGet, "/turns/"+turnID+"/forwards", nil).Must(http.StatusOK, &page)
		settled := len(page.Data) == want
		for _, f := range page.Data {
			settled = settled && f.Status != "PENDING"
		}
		if settled {
			out := map[string]client.QueueForward{}
			for _, f := range page.Data {
				out[f.LinkID] = f
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("forwards of %s did not settle: %+v", turnID, page.Data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestForwardingOverHTTP(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t)
		questions := map[string]any{"questions": []any{map[string]any{"id": "reason", "label": "Reason"}}}
		_, qa, runA := setupQueue(t, a, map[string]any{"turnPrefix": "A", "turnPadding": 3, "preAttention": questions})
		_, qb, runB := setupQueue(t, a, map[string]any{"turnPrefix": "B"})
		_, qc, runC := setupQueue(t, a, nil)
		_, qd, runD := setupQueue(t, a, nil)
		a.API(http.MethodPost, "/queue-runs/"+runD+"/close", nil).Must(http.StatusCreated, nil)
		link := func(body map[string]any) string {
			var l struct{ ID string }
			a.API(http.MethodPost, "/queue-links", body).Must(http.StatusCreated, &l)
			return l.ID
		}
		toB := link(map[string]any{"fromQueueDefinitionId": qa, "toQueueDefinitionId": qb, "keepNumber": true, "keepFormResponse": true,
			"conditions": []any{map[string]any{"source": "answer", "key": "reason", "operator": "contains", "value": "parcel"}}})
		notHigh := link(map[string]any{"fromQueueDefinitionId": qa, "toQueueDefinitionId": qc,
			"conditions": []any{map[string]any{"source": "priority", "operator": "eq", "value": "HIGH"}}})
		manual := link(map[string]any{"fromQueueDefinitionId": qa, "toQueueDefinitionId": qc, "trigger": "manual"})
		toClosed := link(map[string]any{"fromQueueDefinitionId": qa, "toQueueDefinitionId": qd})

		var src struct{ ID, DisplayCode string }
		takeTurn(a, runA, map[string]any{"formResponse": map[string]any{"reason": "a parcel"}}).Must(http.StatusCreated, &src)
		serve(t, a, src.ID)

		// Two links held (toB, toClosed); one did not (notHigh); the manual
		// one waits for a person.
		fw := forwardsOf(t, a, src.ID, 2)
		if fw[toB].Status != "FORWARDED" || fw[toB].ToTurnID == nil || fw[toB].Trigger != "complete" {
			t.Fatalf("forward to B: %+v", fw[toB])
		}
		if fw[toClosed].Status != "FAILED" || *fw[toClosed].ErrorCode != "NO_OPEN_RUN" {
			t.Fatalf("forward to a closed queue: %+v", fw[toClosed])
		}
		if _, ok := fw[notHigh]; ok {
			t.Fatal("a link whose condition fails forwarded")
		}
		var inB struct {
			ID, DisplayCode, Status, QueueRunID string
			FormResponse                        map[string]string
		}
		a.API(http.MethodGet, "/turns/"+*fw[toB].ToTurnID, nil).Must(http.StatusOK, &inB)
		if inB.DisplayCode != src.DisplayCode || inB.QueueRunID != runB || inB.Status != "WAITING" || inB.FormResponse["reason"] != "a parcel" {
			t.Fatalf("the turn in B: %+v", inB)
		}
		// The failure is visible on the link too.
		var failed struct{ Data []client.QueueForward }
		a.API(http.MethodGet, "/queue-links/"+toClosed+"/forwards", nil).Must(http.StatusOK, &failed)
		if len(failed.Data) != 1 || failed.Data[0].Status != "FAILED" || failed.Data[0].ErrorMessage == nil {
			t.Fatalf("link forwards: %+v", failed.Data)
		}

		// Manual forward, right away, once.
		var m1, m2 client.QueueForward
		a.API(http.MethodPost, "/turns/"+src.ID+"/forward", map[string]any{"linkId": manual}).Must(http.StatusCreated, &m1)
		a.API(http.MethodPost, "/turns/"+src.ID+"/forward", map[string]any{"linkId": manual}).Must(http.StatusCreated, &m2)
		if m1.Status != "FORWARDED" || m1.Trigger != "manual" || m2.ID != m1.ID {
			t.Fatalf("manual forwards: %+v %+v", m1, m2)
		}
		var inC struct{ Data []any }
		a.API(http.MethodGet, "/queue-runs/"+runC+"/turns", nil).Must(http.StatusOK, &inC)
		if len(inC.Data) != 1 {
			t.Fatalf("turns in C: %d", len(inC.Data))
		}
		// Refusals answer, and are not recorded.
		if r := a.API(http.MethodPost, "/turns/"+src.ID+"/forward", map[string]any{"linkId": toClosed}); r.Status != http.StatusConflict || r.ErrorCode() != "NO_OPEN_RUN" {
			t.Fatalf("manual forward into a closed queue: %d %s", r.Status, r.Body)
		}
		var bTurn struct{ ID string }
		takeTurn(a, runB, map[string]any{}).Must(http.StatusCreated, &bTurn)
		if r := a.API(http.MethodPost, "/turns/"+bTurn.ID+"/forward", map[string]any{"linkId": manual}); r.Status != 422 || r.ErrorCode() != "LINK_NOT_FROM_TURN_QUEUE" {
			t.Fatalf("a link from another queue: %d %s", r.Status, r.Body)
		}
		if r := a.API(http.MethodPost, "/turns/"+src.ID+"/forward", map[string]any{}); r.Status != 400 {
			t.Fatalf("no linkId: %d", r.Status)
		}
		_, noDispatch := a.NewAccount("premium", "turns:write,workflow:write")
		if r := a.APIWith(noDispatch, http.MethodPost, "/turns/"+src.ID+"/forward", map[string]any{"linkId": manual}); r.Status != http.StatusForbidden {
			t.Fatalf("without dispatch:write: %d", r.Status)
		}
		// Reopening the source and the run of D, then a manual forward
		// retries the failed one.
		a.API(http.MethodPost, "/queue-runs/"+runD+"/open", nil).Must(http.StatusCreated, nil)
		var retried client.QueueForward
		a.API(http.MethodPost, "/turns/"+src.ID+"/forward", map[string]any{"linkId": toClosed}).Must(http.StatusCreated, &retried)
		if retried.ID != fw[toClosed].ID || retried.Status != "FORWARDED" || retried.ErrorCode != nil {
			t.Fatalf("retried forward: %+v", retried)
		}
	})
}
