package e2e

import (
	"net/http"
	"testing"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// consoleHelp is the part of a console read this file looks at.
type consoleHelp struct {
	HelpRequests []helpRequest
	Queue        struct {
		Help struct{ QuickReplies []string }
	}
}

// TestCounterHelpRequests, on each storage: a customer's "I need help" on
// the ticket page is in the console of every counter link of the queue
// (helpRequests, the oldest first) and in no other queue's; the console
// answers it with one of the queue's quick replies (a reply not among
// them is 422 naming reply, none 400 naming reply, a request of another
// queue or an unknown one 404, another reply after the answer 409), the
// answer takes it off every console and the ticket shows the reply; a
// revoked link answers nothing.
func TestCounterHelpRequests(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := newLiveQueue(t, app, "Help desk", map[string]any{
			"help": map[string]any{"enabled": true, "quickReplies": []string{"On my way", "Please come to the counter"}}})
		other := newLiveQueue(t, app, "Elsewhere", map[string]any{"help": map[string]any{"enabled": true, "quickReplies": []string{"On my way"}}})
		desk1 := newCounterLink(t, app, q.ID, map[string]any{"label": "Desk 1"})
		desk2 := newCounterLink(t, app, q.ID, map[string]any{"label": "Desk 2"})
		elsewhere := newCounterLink(t, app, other.ID, map[string]any{})

		read := func(l counterLink) consoleHelp {
			t.Helper()
			var c consoleHelp
			app.Do(http.MethodGet, "/counter/"+l.Token+"/state", nil, nil).Must(http.StatusOK, &c)
			return c
		}
		if c := read(desk1); c.HelpRequests == nil || len(c.HelpRequests) != 0 {
			t.Fatalf("no one asked: helpRequests %+v", c.HelpRequests)
		}

		// Two customers ask, the first twice (one request); a customer of
		// the other queue asks too.
		first, firstCode := takeTicketTurn(t, app, q.RunID, map[string]any{})
		second, secondCode := takeTicketTurn(t, app, q.RunID, map[string]any{})
		otherTurn, _ := takeTicketTurn(t, app, other.RunID, map[string]any{})
		firstLink := newTicketLink(t, app, first, nil)
		for _, tok := range []string{firstLink.Token, firstLink.Token, newTicketLink(t, app, second, nil).Token, newTicketLink(t, app, otherTurn, nil).Token} {
			app.Do(http.MethodPost, "/ticket/"+tok+"/help", nil, nil).Must(http.StatusOK, nil)
		}
		for _, l := range []counterLink{desk1, desk2} {
			c := read(l)
			if len(c.HelpRequests) != 2 || c.HelpRequests[0].TurnID != first || c.HelpRequests[0].DisplayCode != firstCode ||
				c.HelpRequests[1].TurnID != second || c.HelpRequests[1].DisplayCode != secondCode ||
				c.HelpRequests[0].Status != "OPEN" || c.HelpRequests[0].QueueID != q.ID || c.HelpRequests[0].QueueRunID != q.RunID {
				t.Fatalf("console %s: helpRequests %+v", l.ID, c.HelpRequests)
			}
		}
		c := read(elsewhere)
		if len(c.HelpRequests) != 1 || c.HelpRequests[0].TurnID != otherTurn {
			t.Fatalf("the other queue's console: %+v", c.HelpRequests)
		}
		otherReq := c.HelpRequests[0].ID
		h := read(desk1).HelpRequests[0]

		answer := func(l counterLink, id string, body any) *apptest.Response {
			return app.Do(http.MethodPost, "/counter/"+l.Token+"/help-requests/"+id+"/answer", body, nil)
		}
		field := func(r *apptest.Response) any {
			d, _ := r.JSON()["error"].(map[string]any)["details"].(map[string]any)
			if d["field"] != nil {
				return d["field"]
			}
			if paths := r.FieldPaths(); len(paths) > 0 {
				return paths[0]
			}
			return nil
		}
		if r := answer(desk1, h.ID, map[string]any{"reply": "Go away"}); r.Status != http.StatusUnprocessableEntity ||
			r.ErrorCode() != "NOT_A_QUICK_REPLY" || field(r) != "reply" {
			t.Fatalf("a reply not among quickReplies: %d %s", r.Status, r.Body)
		}
		if r := answer(desk1, h.ID, map[string]any{}); r.Status != http.StatusBadRequest || r.ErrorCode() != "VALIDATION_ERROR" || field(r) != "reply" {
			t.Fatalf("no reply: %d %s", r.Status, r.Body)
		}
		if r := answer(desk1, h.ID, map[string]any{"reply": "On my way", "extra": 1}); r.Status != http.StatusBadRequest {
			t.Fatalf("an unknown member: %d %s", r.Status, r.Body)
		}
		if r := answer(desk1, otherReq, map[string]any{"reply": "On my way"}); r.Status != http.StatusNotFound || r.ErrorCode() != "NOT_FOUND" {
			t.Fatalf("another queue's request: %d %s", r.Status, r.Body)
		}
		if r := answer(desk1, "hlp_nope", map[string]any{"reply": "On my way"}); r.Status != http.StatusNotFound {
			t.Fatalf("an unknown request: %d %s", r.Status, r.Body)
		}

		var done struct {
			HelpRequest helpRequest
			Console     consoleHelp
		}
		answer(desk1, h.ID, map[string]any{"reply": "Please come to the counter"}).Must(http.StatusCreated, &done)
		if done.HelpRequest.Status != "ANSWERED" || done.HelpRequest.Reply == nil || *done.HelpRequest.Reply != "Please come to the counter" ||
			len(done.Console.HelpRequests) != 1 || done.Console.HelpRequests[0].TurnID != second {
			t.Fatalf("answered: %+v", done)
		}
		if c := read(desk2); len(c.HelpRequests) != 1 || c.HelpRequests[0].TurnID != second {
			t.Fatalf("the other desk after the answer: %+v", c.HelpRequests)
		}
		_, tk := readTicket(t, app, firstLink.Token)
		if tk.Help == nil || tk.Help.Request == nil || tk.Help.Request.Status != "ANSWERED" || tk.Help.Request.Reply == nil ||
			*tk.Help.Request.Reply != "Please come to the counter" {
			t.Fatalf("the ticket after the answer: %+v", tk.Help)
		}
		// The other desk pressed the same reply at once: the answer as it
		// is; another reply: 409.
		answer(desk2, h.ID, map[string]any{"reply": "Please come to the counter"}).Must(http.StatusCreated, nil)
		if r := answer(desk2, h.ID, map[string]any{"reply": "On my way"}); r.Status != http.StatusConflict || r.ErrorCode() != "HELP_ALREADY_ANSWERED" {
			t.Fatalf("another reply after the answer: %d %s", r.Status, r.Body)
		}

		// A revoked link answers nothing.
		app.API(http.MethodDelete, "/counter-links/"+desk2.ID, nil).Must(http.StatusOK, nil)
		if r := answer(desk2, done.Console.HelpRequests[0].ID, map[string]any{"reply": "On my way"}); r.Status != http.StatusGone ||
			r.ErrorCode() != "COUNTER_LINK_REVOKED" {
			t.Fatalf("a revoked link: %d %s", r.Status, r.Body)
		}
		if c := read(desk1); len(c.HelpRequests) != 1 {
			t.Fatalf("a revoked link's answer changed the list: %+v", c.HelpRequests)
		}
	})
}
