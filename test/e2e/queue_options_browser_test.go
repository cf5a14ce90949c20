package e2e

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// openTicketPage opens a ticket link on a phone-sized tab and waits for
// it to go live.
func openTicketPage(t *testing.T, ctx context.Context, url string) context.Context {
	t.Helper()
	nav, cancel := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(cancel)
	if err := chromedp.Run(nav, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	if err := within(nav, 10*time.Second, `window.qmsTicket && window.qmsTicket.state === "live" && window.qmsTicket.tickets >= 1`); err != nil {
		t.Fatalf("the ticket page never went live: %v", err)
	}
	return nav
}

// shows is join_browser_test.go's textOf; visible is declared there too.
func shows(sel, s string) string {
	return `(document.querySelector(` + strconv.Quote(sel) + `)?.innerText || "").includes(` + strconv.Quote(s) + `)`
}

// TestTicketPageHelpInABrowser: on a queue with help.enabled the customer's
// ticket page, in Chromium, offers "I need help"; pressing it opens a
// request staff see in the API, the button gives way to "Staff have been
// told", and staff's quick reply appears on the open page by itself (the
// stream), within 2 s. On a queue with help off the page shows no button.
func TestTicketPageHelpInABrowser(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))

	off := newLiveQueue(t, app, "Plain", nil)
	offTurn, _ := takeTicketTurn(t, app, off.RunID, map[string]any{})
	plain := openTicketPage(t, ctx, newTicketLink(t, app, offTurn, nil).URL)
	var offered bool
	if err := chromedp.Run(plain, chromedp.Evaluate(visible("#help-ask"), &offered)); err != nil || offered {
		t.Fatalf("help off: the page offers help (%v)", err)
	}

	q := newLiveQueue(t, app, "Help desk", map[string]any{
		"help": map[string]any{"enabled": true, "quickReplies": []string{"On my way", "Please come to the counter"}}})
	turnID, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	nav := openTicketPage(t, ctx, newTicketLink(t, app, turnID, nil).URL)
	if err := within(nav, 2*time.Second, visible("#help-ask")+" && "+shows("#help-ask", "I need help")); err != nil {
		fail(t, nav, "ticket-help-failed.png", "the help button", err)
	}
	if err := chromedp.Run(nav, chromedp.Click("#help-ask", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 2*time.Second, `!`+visible("#help-ask")+" && "+visible("#help-asked")); err != nil {
		fail(t, nav, "ticket-help-failed.png", "the request noted", err)
	}
	var open struct{ Data []helpRequest }
	app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/help-requests?status=OPEN", nil).Must(http.StatusOK, &open)
	if len(open.Data) != 1 || open.Data[0].TurnID != turnID {
		t.Fatalf("staff see %+v", open.Data)
	}
	screenshot(t, nav, "ticket-help-asked.png")

	answered := time.Now()
	app.API(http.MethodPost, "/help-requests/"+open.Data[0].ID+"/answer", map[string]any{"reply": "Please come to the counter"}).
		Must(http.StatusCreated, nil)
	if err := within(nav, 2*time.Second, visible("#help-reply")+" && "+shows("#help-reply", "Please come to the counter")+
		" && !"+visible("#help-asked")+" && "+visible("#help-ask")); err != nil {
		fail(t, nav, "ticket-help-failed.png", "the reply", err)
	}
	t.Logf("answer to the ticket page: %v", time.Since(answered).Round(time.Millisecond))
	screenshot(t, nav, "ticket-help-answered.png")
}

// TestTicketPageSecurityCodeInABrowser: with arrivalBoard.showSecurity the
// customer's ticket page shows the security code, and the board (a TV tab)
// shows the same code in a column beside the called turn; without it the
// page shows none and the board has no such column.
func TestTicketPageSecurityCodeInABrowser(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	for _, show := range []bool{true, false} {
		q := newLiveQueue(t, app, "Pickup", map[string]any{"arrivalBoard": map[string]any{
			"columns": []any{map[string]any{"key": "plate", "label": "Plate"}}, "showSecurity": show}})
		id, _ := takeTicketTurn(t, app, q.RunID, map[string]any{"formResponse": map[string]any{}})
		link := newTicketLink(t, app, id, nil)
		_, tk := readTicket(t, app, link.Token)
		nav := openTicketPage(t, ctx, link.URL)
		if !show {
			var shown bool
			if err := chromedp.Run(nav, chromedp.Evaluate(visible("#security"), &shown)); err != nil || shown {
				t.Fatalf("showSecurity off: the page shows a security code (%v)", err)
			}
			continue
		}
		code := *tk.SecurityCode
		if err := within(nav, 2*time.Second, visible("#security")+" && "+shows("#security", "Security code: "+code)); err != nil {
			fail(t, nav, "ticket-security-failed.png", "the security code", err)
		}
		screenshot(t, nav, "ticket-security-code.png")

		tv, cancelTV := newWindow(t, ctx)
		defer cancelTV()
		if err := chromedp.Run(tv, chromedp.EmulateViewport(1920, 1080), chromedp.Navigate(newDisplayToken(t, app, q.RunID).URL)); err != nil {
			t.Fatal(err)
		}
		if err := within(tv, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live"`); err != nil {
			t.Fatalf("the board never went live: %v", err)
		}
		app.API(http.MethodPost, "/turns/"+id+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
		row := `document.querySelector('#calling-rows tr[data-turn-id="` + id + `"]')`
		if err := within(tv, 3*time.Second, `!!`+row+` && `+row+`.querySelector("td.security")?.innerText === `+strconv.Quote(code)+
			` && `+shows("#calling-head", "Security code")); err != nil {
			fail(t, tv, "board-security-failed.png", "the board's security column", err)
		}
		screenshot(t, tv, "board-security-code.png")
	}
}
