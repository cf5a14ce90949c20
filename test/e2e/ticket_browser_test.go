package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// TestTicketPageInChromium opens a customer's ticket page on a phone-sized
// headless Chromium, and the board on a TV-sized tab beside it, as the
// customer and the waiting room see them: the page shows the turn and how
// many are ahead, updates when the line moves, shows the call ("Go to
// Window 2") within 2 s of the API call, and announces it; the board shows
// the same call. It measures the time from the API call to each page.
// "Leave the queue" cancels a turn; an unknown link and an expired one say
// so; a link made in French speaks French. Screenshots are kept as
// artifacts.
func TestTicketPageInChromium(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 100000
		c.Tickets.ExpireAfter = 3 * time.Second
	}))
	q := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)
	first, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	mine, code := takeTicketTurn(t, app, q.RunID, map[string]any{})
	l := newTicketLink(t, app, mine, nil)

	// Accept the page's "leave the queue?" confirmation, as a customer
	// would.
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	nav, cancel := context.WithTimeout(ctx, 180*time.Second)
	defer cancel()
	if err := chromedp.Run(nav, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(l.URL)); err != nil {
		t.Fatalf("open %s: %v", l.URL, err)
	}
	if err := within(nav, 10*time.Second, `window.qmsTicket && window.qmsTicket.state === "live" && window.qmsTicket.tickets >= 1`); err != nil {
		t.Fatalf("the ticket page never went live: %v", err)
	}
	has := func(sel, s string) string {
		return `(document.querySelector(` + strconv.Quote(sel) + `)?.innerText || "").includes(` + strconv.Quote(s) + `)`
	}
	if err := within(nav, 2*time.Second, has("#code", code)+" && "+has("#ahead", "1 person ahead of you")+" && "+has("#branch", "Branch Pickup")); err != nil {
		fail(t, nav, "ticket-page-failed.png", "the waiting ticket", err)
	}
	var wide bool
	if err := chromedp.Run(nav, chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &wide)); err != nil || wide {
		t.Fatalf("the ticket page is wider than the phone (%v)", err)
	}
	screenshot(t, nav, "ticket-page-waiting.png")

	// The board on a TV, in a window of its own (the phone stays in view).
	tv, cancelTV := newWindow(t, ctx)
	defer cancelTV()
	if err := chromedp.Run(tv, chromedp.EmulateViewport(1920, 1080), chromedp.Navigate(tok.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(tv, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live"`); err != nil {
		t.Fatalf("the board never went live: %v", err)
	}

	// The line moves: the first is called; this one is next.
	app.API(http.MethodPost, "/turns/"+first+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
	if err := within(nav, 2*time.Second, has("#ahead", "You are next")); err != nil {
		fail(t, nav, "ticket-page-failed.png", "the line moving", err)
	}
	app.API(http.MethodPost, "/turns/"+first+"/cancel", nil).Must(http.StatusCreated, nil)

	// Called: both pages within 2 s; the time to each is measured.
	called := time.Now()
	app.API(http.MethodPost, "/turns/"+mine+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
	done := make(chan time.Duration, 2)
	go func() {
		if within(tv, 2*time.Second, `!!document.querySelector('#calling-rows tr[data-turn-id="`+mine+`"]')`) == nil {
			done <- time.Since(called)
		} else {
			done <- -1
		}
	}()
	if err := within(nav, 2*time.Second, `!document.querySelector("#called").hidden && `+has("#called-where", "Go to Window 2")); err != nil {
		fail(t, nav, "ticket-page-failed.png", "the call", err)
	}
	toTicket := time.Since(called)
	toBoard := <-done
	if toBoard < 0 {
		t.Fatalf("the board did not show the call within 2 s")
	}
	t.Logf("API call to the ticket page: %v; to the board: %v", toTicket.Round(time.Millisecond), toBoard.Round(time.Millisecond))
	var announced, title string
	if err := chromedp.Run(nav,
		chromedp.Sleep(1200*time.Millisecond), // the title flashes every second
		chromedp.Evaluate(`window.qmsTicket.alerts.join(" | ")`, &announced),
		chromedp.Evaluate(`document.querySelector("#announce").textContent`, &title),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(announced, "Your turn! "+code+". Go to Window 2") || !strings.Contains(title, "Go to Window 2") {
		t.Fatalf("the call was announced %q (live region %q)", announced, title)
	}
	var boardAnnounced string
	if err := chromedp.Run(tv, chromedp.Evaluate(`window.qmsBoard.announce()`, &boardAnnounced)); err != nil {
		t.Fatal(err)
	}
	if boardAnnounced != code+", go to Window 2" {
		t.Fatalf("the board announced %q to screen readers", boardAnnounced)
	}
	screenshot(t, nav, "ticket-page-called.png")

	// Finished: the final state, then the link expires (3 s here) and the
	// open page says so.
	app.API(http.MethodPost, "/turns/"+mine+"/start", nil).Must(http.StatusCreated, nil)
	app.API(http.MethodPost, "/turns/"+mine+"/complete", nil).Must(http.StatusCreated, nil)
	if err := within(nav, 2*time.Second, has("#ended", "Your visit is complete.")+` && document.querySelector("#leave").hidden`); err != nil {
		fail(t, nav, "ticket-page-failed.png", "the final state", err)
	}
	screenshot(t, nav, "ticket-page-completed.png")
	if err := within(nav, 15*time.Second, `window.qmsTicket.state === "expired" && `+has("#message", "This ticket has ended")); err != nil {
		fail(t, nav, "ticket-page-failed.png", "the expired link", err)
	}
	screenshot(t, nav, "ticket-page-expired.png")

	// Leave the queue, from a page in French (the link's language).
	other, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	fr := newTicketLink(t, app, other, map[string]any{"language": "fr"})
	if err := chromedp.Run(nav, chromedp.Navigate(fr.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsTicket.state === "live" && `+has("#number-label", "VOTRE NUMÉRO")+" && "+has("#leave", "Quitter la file")); err != nil {
		fail(t, nav, "ticket-page-failed.png", "the French page", err)
	}
	screenshot(t, nav, "ticket-page-fr.png")
	if err := chromedp.Run(nav, chromedp.Click("#leave", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 5*time.Second, has("#status", "Annulé")); err != nil {
		fail(t, nav, "ticket-page-failed.png", "leaving the queue", err)
	}
	if got := app.API(http.MethodGet, "/turns/"+other, nil).JSON()["status"]; got != "CANCELLED" {
		t.Fatalf("after leave the turn is %v", got)
	}

	// An unknown link says so plainly.
	if err := chromedp.Run(nav, chromedp.Navigate(app.BaseURL+"/ticket/qmst_"+strings.Repeat("a", 32))); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 5*time.Second, `window.qmsTicket.state === "invalid" && `+has("#message", "This ticket link is not valid")); err != nil {
		fail(t, nav, "ticket-page-failed.png", "the unknown link", err)
	}
}

// fail keeps a screenshot and the page's text, and fails.
func fail(t *testing.T, ctx context.Context, shot, what string, err error) {
	t.Helper()
	var text string
	_ = chromedp.Run(ctx, chromedp.Text("body", &text, chromedp.ByQuery))
	screenshot(t, ctx, shot)
	t.Fatalf("%s: %v; the page reads:\n%s", what, err, text)
}
