package e2e

import (
	"net/http"
	"testing"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// The queue options of spec 2.1 that issue 31 made real, each on and off
// through the API, on each storage (docs/queues.md names these tests).

// eventsSince returns the events of the run raised after cursor (the
// polled form of /events/stream) and the cursor to go on from.
func eventsSince(t *testing.T, app *apptest.App, runID, cursor string) ([]streamMessage, string) {
	t.Helper()
	var out []streamMessage
	for {
		var p struct {
			Data    []streamMessage
			Cursor  string
			HasMore bool
		}
		path := "/events/stream?limit=200&runId=" + runID
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		app.API(http.MethodGet, path, nil).Must(http.StatusOK, &p)
		out = append(out, p.Data...)
		cursor = p.Cursor
		if !p.HasMore {
			return out, cursor
		}
	}
}

func eventNames(ms []streamMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Event)
	}
	return out
}

type helpRequest struct {
	ID, TurnID, QueueID, QueueRunID, DisplayCode, Status string
	Reply                                                *string
	AnsweredAt                                           *string
}

// TestHelpRequests: a queue with help.enabled lets the customer ask for
// help on the ticket page (turn.help_requested, once however often the
// button is pressed while the request is open); staff list the run's open
// requests and answer with one of the quickReplies (anything else is 422
// naming reply; turn.help_answered); the ticket shows the reply. With help
// off the page offers nothing and asking is 409 HELP_DISABLED.
func TestHelpRequests(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))

		// Off (the default): nothing offered, asking refused.
		off := newLiveQueue(t, app, "No help", nil)
		offTurn, _ := takeTicketTurn(t, app, off.RunID, map[string]any{})
		offLink := newTicketLink(t, app, offTurn, nil)
		if r, tk := readTicket(t, app, offLink.Token); r.Status != http.StatusOK || tk.Help != nil {
			t.Fatalf("help off: ticket %s", r.Body)
		}
		if r := app.Do(http.MethodPost, "/ticket/"+offLink.Token+"/help", nil, nil); r.Status != http.StatusConflict || r.ErrorCode() != "HELP_DISABLED" {
			t.Fatalf("help off: ask %d %s", r.Status, r.Body)
		}

		// On.
		q := newLiveQueue(t, app, "Help desk", map[string]any{
			"help": map[string]any{"enabled": true, "quickReplies": []string{"On my way", "Please come to the counter"}}})
		_, cursor := eventsSince(t, app, q.RunID, "")
		turnID, code := takeTicketTurn(t, app, q.RunID, map[string]any{})
		link := newTicketLink(t, app, turnID, nil)
		r, tk := readTicket(t, app, link.Token)
		if r.Status != http.StatusOK || tk.Help == nil || !tk.Help.Available || tk.Help.Request != nil {
			t.Fatalf("help on, not asked: %s", r.Body)
		}
		for i := 0; i < 3; i++ { // pressed three times: one request
			r := app.Do(http.MethodPost, "/ticket/"+link.Token+"/help", nil, nil)
			if r.Status != http.StatusOK {
				t.Fatalf("ask %d: %d %s", i, r.Status, r.Body)
			}
		}
		_, tk = readTicket(t, app, link.Token)
		if tk.Help == nil || tk.Help.Available || tk.Help.Request == nil || tk.Help.Request.Status != "OPEN" || tk.Help.Request.Reply != nil {
			t.Fatalf("asked: %+v", tk.Help)
		}

		var open struct{ Data []helpRequest }
		app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/help-requests?status=OPEN", nil).Must(http.StatusOK, &open)
		if len(open.Data) != 1 || open.Data[0].TurnID != turnID || open.Data[0].DisplayCode != code || open.Data[0].Status != "OPEN" ||
			open.Data[0].QueueID != q.ID || open.Data[0].QueueRunID != q.RunID {
			t.Fatalf("open requests %+v", open.Data)
		}
		h := open.Data[0]

		if r := app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "Go away"}); r.Status != http.StatusUnprocessableEntity ||
			r.ErrorCode() != "NOT_A_QUICK_REPLY" || r.JSON()["error"].(map[string]any)["details"].(map[string]any)["field"] != "reply" {
			t.Fatalf("a reply not among quickReplies: %d %s", r.Status, r.Body)
		}
		if r := app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{}); r.Status != http.StatusBadRequest || r.ErrorCode() != "VALIDATION_ERROR" {
			t.Fatalf("no reply: %d %s", r.Status, r.Body)
		}
		var answered helpRequest
		app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "On my way"}).Must(http.StatusCreated, &answered)
		if answered.Status != "ANSWERED" || answered.Reply == nil || *answered.Reply != "On my way" || answered.AnsweredAt == nil {
			t.Fatalf("answered %+v", answered)
		}
		app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "On my way"}).Must(http.StatusCreated, nil)
		if r := app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "Please come to the counter"}); r.Status != http.StatusConflict || r.ErrorCode() != "HELP_ALREADY_ANSWERED" {
			t.Fatalf("answered twice: %d %s", r.Status, r.Body)
		}
		app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/help-requests?status=OPEN", nil).Must(http.StatusOK, &open)
		if len(open.Data) != 0 {
			t.Fatalf("open after the answer: %+v", open.Data)
		}
		_, tk = readTicket(t, app, link.Token)
		if tk.Help == nil || !tk.Help.Available || tk.Help.Request == nil || tk.Help.Request.Status != "ANSWERED" ||
			tk.Help.Request.Reply == nil || *tk.Help.Request.Reply != "On my way" {
			t.Fatalf("ticket after the answer: %+v", tk.Help)
		}
		var ofTurn struct{ Data []helpRequest }
		app.API(http.MethodGet, "/turns/"+turnID+"/help-requests", nil).Must(http.StatusOK, &ofTurn)
		if len(ofTurn.Data) != 1 || ofTurn.Data[0].ID != h.ID {
			t.Fatalf("the turn's requests %+v", ofTurn.Data)
		}

		evs, _ := eventsSince(t, app, q.RunID, cursor)
		var helpEvents []streamMessage
		for _, m := range evs {
			if m.Event == "turn.help_requested" || m.Event == "turn.help_answered" {
				helpEvents = append(helpEvents, m)
			}
		}
		if len(helpEvents) != 2 || helpEvents[0].Event != "turn.help_requested" || helpEvents[1].Event != "turn.help_answered" ||
			helpEvents[0].Data["turnId"] != turnID || helpEvents[0].Data["displayCode"] != code || helpEvents[0].Data["helpRequestId"] != h.ID ||
			helpEvents[1].Data["reply"] != "On my way" {
			t.Fatalf("help events %+v (all: %v)", helpEvents, eventNames(evs))
		}

		// Another account sees none of it.
		_, otherKey := app.NewAccount("premium", "all")
		if r := app.APIWith(otherKey, http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "On my way"}); r.Status != http.StatusForbidden {
			t.Fatalf("another account answers: %d %s", r.Status, r.Body)
		}
		if r := app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/help-requests?status=LOST", nil); r.Status != http.StatusBadRequest {
			t.Fatalf("a bad status filter: %d %s", r.Status, r.Body)
		}

		// A finished turn asks no more.
		app.API(http.MethodPost, "/turns/"+turnID+"/cancel", nil).Must(http.StatusCreated, nil)
		if r := app.Do(http.MethodPost, "/ticket/"+link.Token+"/help", nil, nil); r.Status != http.StatusConflict || r.ErrorCode() != "TURN_FINISHED" {
			t.Fatalf("finished: ask %d %s", r.Status, r.Body)
		}
	})
}
