package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// jsHas is a JavaScript test that the element's text contains s.
func jsHas(sel, s string) string {
	return `(document.querySelector(` + strconv.Quote(sel) + `)?.innerText || "").includes(` + strconv.Quote(s) + `)`
}

// keys types one key at a time into the page, as a person at a keyboard.
func keys(t *testing.T, ctx context.Context, ks ...string) {
	t.Helper()
	for _, k := range ks {
		if err := chromedp.Run(ctx, chromedp.KeyEvent(k)); err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
	}
}

// consoleTurn is the turn the console shows at its desk, and its status.
func consoleFocus(code, status string) string {
	return jsHas("#focus-code", code) + " && " + jsHas("#focus-status", status)
}

// waitConsole waits for the expression, failing with a screenshot.
func waitConsole(t *testing.T, ctx context.Context, d time.Duration, what, expr string) {
	t.Helper()
	if err := within(ctx, d, expr); err != nil {
		var state string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`JSON.stringify({probe: window.qmsCounter, error: document.querySelector("#error")?.innerText, focus: document.querySelector("#focus")?.innerText})`, &state))
		fail(t, ctx, "counter-failed.png", what+" (page: "+state+")", err)
	}
}

// fits reports whether the page fits its window without scrolling.
func fits(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	var over string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`(() => {
		const d = document.documentElement;
		const out = [];
		if (d.scrollWidth > innerWidth) { out.push("wider: " + d.scrollWidth + " > " + innerWidth); }
		if (d.scrollHeight > innerHeight) { out.push("taller: " + d.scrollHeight + " > " + innerHeight); }
		for (const b of document.querySelectorAll("button[data-act]:not([hidden])")) {
			const r = b.getBoundingClientRect();
			if (r.right > innerWidth || r.bottom > innerHeight || b.scrollWidth > b.clientWidth + 1) { out.push("button " + b.dataset.act + " cut"); }
			if (r.height < 40) { out.push("button " + b.dataset.act + " under 40px: " + r.height); }
		}
		return out.join("; ");
	})()`, &over)); err != nil {
		t.Fatal(err)
	}
	if over != "" {
		t.Errorf("%s: the console does not fit: %s", what, over)
	}
}

// docsShot keeps a screenshot in docs/img as well as the artifacts.
func docsShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.CaptureScreenshot(&png)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	writeArtifact(t, name, png)
	if os.Getenv("QMS_DOCS_SCREENSHOTS") != "" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCounterConsoleInChromium runs a morning at two counters at once, in
// a real headless Chromium, on each storage: a laptop (1366x768, Window 1,
// keyboard only) and a 10-inch tablet (1280x800, Window 2, clicks), with
// the waiting-room board and a customer's ticket page open beside them.
// Walk-ins arrive through the API and at the counter; the counters call
// next, start, complete, call again, hold and release, forward, mark a
// no-show; a double click calls one turn; a press on a turn the other
// counter just took says so in words; the help overlay lists every
// shortcut; contrast and live regions are checked; a revoked link stops
// the open console. It measures the time from the key press to the call
// on the board and on the ticket page.
func TestCounterConsoleInChromium(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		ctx := browser(t)
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := newCounterQueue(t, app, "Parcels")
		board := newDisplayToken(t, app, q.RunID)
		laptopLink := newCounterLink(t, app, q.ID, map[string]any{"label": "Desk 1", "stationIds": []any{q.Window1}, "showDetails": true})
		tabletLink := newCounterLink(t, app, q.ID, map[string]any{"label": "Tablet"})

		// The morning's first customers, through the API.
		type turn struct{ ID, Code string }
		var line []turn
		for i, reason := range []string{"Pickup", "Return", "Pickup", "Pickup", "Return"} {
			var v struct{ ID, DisplayCode string }
			body := map[string]any{"formResponse": map[string]any{"reason": reason}}
			if i == 0 {
				body["phone"] = "+5511999990000"
			}
			app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", body).Must(http.StatusCreated, &v)
			line = append(line, turn{v.ID, v.DisplayCode})
		}
		ticket := newTicketLink(t, app, line[0].ID, nil)

		nav, cancel := context.WithTimeout(ctx, 240*time.Second)
		defer cancel()
		laptop := nav
		if err := chromedp.Run(laptop, chromedp.EmulateViewport(1366, 768), chromedp.Navigate(laptopLink.URL)); err != nil {
			t.Fatal(err)
		}
		tablet, cancelTablet := newWindow(t, nav)
		defer cancelTablet()
		if err := chromedp.Run(tablet, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(tabletLink.URL)); err != nil {
			t.Fatal(err)
		}
		// The board and the phone are other devices: on another host name,
		// so that their streams do not share the counters' six connections
		// per host in this one browser (which would queue the counters'
		// presses behind them, as no real counter's browser does).
		elsewhere := strings.NewReplacer("127.0.0.1", "localhost")
		tv, cancelTV := newWindow(t, nav)
		defer cancelTV()
		if err := chromedp.Run(tv, chromedp.EmulateViewport(1280, 720), chromedp.Navigate(elsewhere.Replace(board.URL))); err != nil {
			t.Fatal(err)
		}
		phone, cancelPhone := newWindow(t, nav)
		defer cancelPhone()
		if err := chromedp.Run(phone, chromedp.EmulateViewport(390, 844), chromedp.Navigate(elsewhere.Replace(ticket.URL))); err != nil {
			t.Fatal(err)
		}
		live := `window.qmsCounter && window.qmsCounter.state === "live" && window.qmsCounter.consoles >= 1 && !document.querySelector("#console").hidden`
		waitConsole(t, laptop, 10*time.Second, "the laptop's console going live", live)
		waitConsole(t, tablet, 10*time.Second, "the tablet's console going live", live)
		if err := within(tv, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live"`); err != nil {
			t.Fatalf("the board never went live: %v", err)
		}
		if err := within(phone, 10*time.Second, `window.qmsTicket && window.qmsTicket.state === "live"`); err != nil {
			t.Fatalf("the ticket page never went live: %v", err)
		}
		waitConsole(t, laptop, 5*time.Second, "the line on the laptop",
			`document.querySelectorAll('table[data-group="waiting"] tr.row').length === 5 && `+jsHas("#counts", "5 waiting · 5 people")+
				` && `+jsHas(`table[data-group="waiting"]`, "Pickup"))
		// The laptop's link acts for Window 1 only: its picker has it alone.
		waitConsole(t, laptop, time.Second, "the laptop's station", `document.querySelectorAll("#station option").length === 1 && `+jsHas("#station", "Window 1"))
		// The tablet's link shows no details.
		var detailsShown bool
		if err := chromedp.Run(tablet, chromedp.Evaluate(`document.body.innerText.includes("+5511999990000") || !!document.querySelector("td.answers")`, &detailsShown)); err != nil || detailsShown {
			t.Fatalf("the tablet's link shows customer details (%v)", err)
		}
		fits(t, laptop, "laptop 1366x768")
		fits(t, tablet, "tablet 1280x800")

		// The tablet picks Window 2.
		if err := chromedp.Run(tablet, chromedp.SetValue("#station", q.Window2, chromedp.ByID),
			chromedp.Evaluate(`document.querySelector("#station").dispatchEvent(new Event("change"))`, nil)); err != nil {
			t.Fatal(err)
		}

		// N on the laptop: the first turn, called to Window 1; the board
		// and the customer's ticket show it. Timed from the key press.
		pressed := time.Now()
		keys(t, laptop, "n")
		seen := make(chan time.Duration, 2)
		go func() {
			if within(tv, 6*time.Second, `!!document.querySelector('#calling-rows tr[data-turn-id="`+line[0].ID+`"]')`) == nil {
				seen <- time.Since(pressed)
			} else {
				seen <- -1
			}
		}()
		if err := within(phone, 6*time.Second, `!document.querySelector("#called").hidden && `+jsHas("#called-where", "Window 1")); err != nil {
			fail(t, phone, "counter-ticket-failed.png", "the call on the ticket page", err)
		}
		toTicket := time.Since(pressed)
		toBoard := <-seen
		if toBoard < 0 {
			fail(t, tv, "counter-board-failed.png", "the call on the board", fmt.Errorf("not within 6 s"))
		}
		var pressMS float64
		if err := chromedp.Run(laptop, chromedp.Evaluate(`window.qmsCounter.presses[0].ms || -1`, &pressMS)); err != nil {
			t.Fatal(err)
		}
		t.Logf("key press to the call shown: board %v, ticket page %v; the press's round trip in the page %.0f ms",
			toBoard.Round(time.Millisecond), toTicket.Round(time.Millisecond), pressMS)
		waitConsole(t, laptop, 5*time.Second, "the laptop's call", consoleFocus(line[0].Code, "Called")+` && `+jsHas("#focus-details", "+5511999990000"))
		waitConsole(t, laptop, 5*time.Second, "the call announced",
			`[...document.querySelectorAll("[aria-live]")].some((e) => e.textContent.includes(`+strconv.Quote(line[0].Code+" called to Window 1")+`))`)

		// The tablet clicks Next: the second turn, at Window 2; the laptop's
		// line shows it called there (an event).
		if err := chromedp.Run(tablet, chromedp.Click("#btn-next", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		waitConsole(t, tablet, 5*time.Second, "the tablet's call", consoleFocus(line[1].Code, "Called"))
		waitConsole(t, laptop, 5*time.Second, "the tablet's call on the laptop",
			jsHas(`table[data-group="called"]`, line[1].Code)+` && `+jsHas(`table[data-group="called"]`, "Window 2"))

		// Laptop: start, complete. Tablet: call again, hold, then release.
		keys(t, laptop, "s")
		waitConsole(t, laptop, 5*time.Second, "start", consoleFocus(line[0].Code, "Being served"))
		keys(t, laptop, "c")
		waitConsole(t, laptop, 5*time.Second, "complete", `document.querySelector("#focus-turn").hidden && `+jsHas(`table[data-group="finished"]`, line[0].Code))
		if err := chromedp.Run(tablet, chromedp.Click(`button[data-act="recall"]`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		waitConsole(t, tablet, 5*time.Second, "call again", jsHas("#focus-meta", "called 2 times"))
		if err := chromedp.Run(tablet, chromedp.Click(`button[data-act="hold"]`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		waitConsole(t, tablet, 5*time.Second, "hold", jsHas(`table[data-group="held"]`, line[1].Code))
		// The laptop sees the hold within the console's 2 s re-read (hold
		// raises no event).
		waitConsole(t, laptop, 4*time.Second, "the hold on the laptop", jsHas(`table[data-group="held"]`, line[1].Code))
		if err := chromedp.Run(tablet, chromedp.Click(`table[data-group="held"] tr.row`, chromedp.ByQuery),
			chromedp.Click(`button[data-act="release"]`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		waitConsole(t, tablet, 5*time.Second, "release", `document.querySelectorAll('table[data-group="held"] tr.row').length === 0 && `+
			jsHas(`table[data-group="waiting"]`, line[1].Code))

		// A double click on Next: one press, one turn called.
		var before struct{ Data []struct{ ID string } }
		app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/turns?status=CALLED", nil).Must(http.StatusOK, &before)
		if err := chromedp.Run(tablet, chromedp.DoubleClick("#btn-next", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		waitConsole(t, tablet, 5*time.Second, "the double click's call", jsHas("#focus-status", "Called"))
		time.Sleep(300 * time.Millisecond)
		var after struct{ Data []struct{ ID string } }
		app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/turns?status=CALLED", nil).Must(http.StatusOK, &after)
		var presses int
		if err := chromedp.Run(tablet, chromedp.Evaluate(`window.qmsCounter.presses.filter((p) => p.action === "next").length`, &presses)); err != nil {
			t.Fatal(err)
		}
		if len(after.Data) != len(before.Data)+1 || presses != 2 {
			t.Fatalf("a double click on Next: %d called before, %d after, %d next presses in all (want one more called, 2 presses)", len(before.Data), len(after.Data), presses)
		}
		var tabletTurn string
		if err := chromedp.Run(tablet, chromedp.Evaluate(`window.qmsCounter.focus`, &tabletTurn)); err != nil {
			t.Fatal(err)
		}
		// The released turn was the next one called (its call was
		// interrupted).
		if tabletTurn != line[1].ID {
			t.Fatalf("the double click called %s, want the released %s", tabletTurn, line[1].ID)
		}
		// No-show at the tablet.
		if err := chromedp.Run(tablet, chromedp.Click(`button[data-act="no-show"]`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		waitConsole(t, tablet, 5*time.Second, "no-show", jsHas(`table[data-group="finished"]`, "No-show"))

		// Keyboard only on the laptop: a walk-in with the queue's question.
		keys(t, laptop, "w")
		waitConsole(t, laptop, time.Second, "the walk-in dialog", `document.querySelector("#dlg-walk-in").open && document.activeElement.id === "walk-in-people"`)
		keys(t, laptop, "2", kb.Tab, kb.Tab)
		waitConsole(t, laptop, time.Second, "the question's field", `document.activeElement.dataset.questionId === "reason"`)
		// A choice: the select takes the first letter of its option.
		keys(t, laptop, "R")
		waitConsole(t, laptop, time.Second, "the answer", `document.activeElement.value === "Return"`)
		// On to the button (past Close), and Enter.
		keys(t, laptop, kb.Tab, kb.Tab, kb.Enter)
		waitConsole(t, laptop, 6*time.Second, "the walk-in", `!document.querySelector("#dlg-walk-in").open && `+jsHas("#focus-status", "Waiting")+` && `+jsHas("#focus-meta", "2 people"))

		// Forward the walk-in to the cashier: F, then 1.
		var walkCode string
		if err := chromedp.Run(laptop, chromedp.Evaluate(`document.querySelector("#focus-code").innerText`, &walkCode)); err != nil {
			t.Fatal(err)
		}
		keys(t, laptop, "f")
		waitConsole(t, laptop, time.Second, "the forward dialog", `document.querySelector("#dlg-forward").open && `+jsHas("#dlg-forward", "Parcels cashier"))
		keys(t, laptop, "1")
		waitConsole(t, laptop, 6*time.Second, "the forward", jsHas(`table[data-group="finished"]`, walkCode))
		var dest struct{ Data []struct{ Status string } }
		app.API(http.MethodGet, "/queue-runs/"+q.ToRunID+"/turns", nil).Must(http.StatusOK, &dest)
		if len(dest.Data) != 1 {
			t.Fatalf("the forward made %d turns in the cashier's queue", len(dest.Data))
		}

		// Another counter takes a turn the laptop picked: the laptop's
		// press says so in words and the line is refreshed.
		keys(t, laptop, kb.Escape)
		target := line[2]
		if err := chromedp.Run(laptop, chromedp.Evaluate(`document.querySelector('tr.row[data-turn-id="`+target.ID+`"]').click()`, nil)); err != nil {
			t.Fatal(err)
		}
		waitConsole(t, laptop, time.Second, "the pick", consoleFocus(target.Code, "Waiting"))
		// The tablet holds it, and the laptop presses Hold before its line
		// could hear of it: the hold raises an event that reaches the
		// laptop's console within milliseconds, so the tablet's press is
		// sent synchronously and the click follows in the same task of the
		// page (no console update can come in between).
		if err := chromedp.Run(laptop, chromedp.Evaluate(`(() => {
			const x = new XMLHttpRequest();
			x.open("POST", "/counter/`+tabletLink.Token+`/press", false);
			x.setRequestHeader("Content-Type", "application/json");
			x.send(JSON.stringify({key: "tablet-hold-0001", action: "hold", turnId: "`+target.ID+`"}));
			if (x.status >= 300) { throw new Error("the tablet's hold: " + x.status); }
			document.querySelector('button[data-act="hold"]').click();
		})()`, nil)); err != nil {
			t.Fatal(err)
		}
		waitConsole(t, laptop, 6*time.Second, "the refusal in words",
			jsHas("#error", "Another counter got there first: "+target.Code+" is now On hold")+` && `+consoleFocus(target.Code, "On hold"))
		// Calling it to Window 1 works (held turns can be called).
		keys(t, laptop, "l")
		waitConsole(t, laptop, 5*time.Second, "calling a chosen turn", consoleFocus(target.Code, "Called")+` && document.querySelector("#error").hidden`)

		// The help overlay lists every shortcut; Esc closes it.
		keys(t, laptop, "?")
		waitConsole(t, laptop, time.Second, "the help", `document.querySelector("#dlg-help").open && document.querySelectorAll("#help-table tr").length >= 18`)
		docsShot(t, laptop, "counter-help.png")
		keys(t, laptop, kb.Escape)
		waitConsole(t, laptop, time.Second, "the help closed", `!document.querySelector("#dlg-help").open`)

		// Every button names its shortcut, to the eye and to assistive
		// technology, and shows its focus.
		var missing string
		if err := chromedp.Run(laptop, chromedp.Evaluate(`[...document.querySelectorAll("button[data-act]")].filter((b) => !b.getAttribute("aria-keyshortcuts") || !b.querySelector("kbd")).map((b) => b.dataset.act).join(",")`, &missing)); err != nil || missing != "" {
			t.Fatalf("buttons without a shown shortcut: %q (%v)", missing, err)
		}
		keys(t, laptop, kb.Tab)
		var ring string
		if err := chromedp.Run(laptop, chromedp.Evaluate(`(() => { const s = getComputedStyle(document.activeElement); return s.outlineStyle + " " + s.outlineWidth; })()`, &ring)); err != nil || !strings.HasPrefix(ring, "solid 3px") {
			t.Fatalf("the focused control shows no ring: %q (%v)", ring, err)
		}

		// Contrast, in the states seen: a turn called, the line, an error.
		checkContrast(t, laptop, "laptop", "#focus-code", "td.code-cell", "#btn-next span")
		checkContrast(t, tablet, "tablet", "#focus-empty")
		docsShot(t, laptop, "counter-laptop.png")
		docsShot(t, tablet, "counter-tablet.png")
		fits(t, laptop, "laptop 1366x768, mid-morning")
		fits(t, tablet, "tablet 1280x800, mid-morning")
		if err := chromedp.Run(tablet, chromedp.EmulateViewport(800, 1280)); err != nil {
			t.Fatal(err)
		}
		fits(t, tablet, "tablet 800x1280")
		docsShot(t, tablet, "counter-tablet-portrait.png")

		// The server restarts (PostgreSQL: the same database, the same
		// address): the console says the connection is lost, reconnects by
		// itself and works on.
		if app.Config.Storage == "postgres" {
			addr := strings.TrimPrefix(app.BaseURL, "http://")
			app.Stop()
			waitConsole(t, laptop, 10*time.Second, "the connection lost",
				`window.qmsCounter.state === "reconnecting" && `+jsHas("#connection", "Connection lost"))
			checkContrast(t, laptop, "laptop, connection lost", "#connection.connection.down")
			key, account := app.Key, app.AccountID
			app = apptest.PostgresAt(t, app.Config.Database.URL, apptest.WithConfig(func(c *config.Config) {
				c.RateLimit.PerMinute = 100000
				c.HTTP.Addr = addr
			}))
			app.Key, app.AccountID = key, account // the same account, in the same database
			waitConsole(t, laptop, 20*time.Second, "the reconnection", `window.qmsCounter.state === "live"`)
			keys(t, laptop, "s")
			waitConsole(t, laptop, 6*time.Second, "a press after the restart", consoleFocus(target.Code, "Being served"))
		}

		// Revoked: the open console says so within its 2 s check.
		app.API(http.MethodDelete, "/counter-links/"+tabletLink.ID, nil).Must(http.StatusOK, nil)
		waitConsole(t, tablet, 5*time.Second, "the revocation", `!document.querySelector("#message").hidden && `+jsHas("#message-title", "revoked"))
		if err := chromedp.Run(tablet, chromedp.Navigate(tabletLink.URL)); err != nil {
			t.Fatal(err)
		}
		if err := within(tablet, 5*time.Second, `document.body.innerText.includes("This counter link has been revoked")`); err != nil {
			t.Fatalf("a revoked link's page: %v", err)
		}
	})
}

// TestCounterConsoleLanguagesInChromium opens a console whose link speaks
// each of the screens' other languages: the buttons and the line speak it.
func TestCounterConsoleLanguagesInChromium(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	q := newCounterQueue(t, app, "Langues")
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{"formResponse": map[string]any{"reason": "Pickup"}}).Must(http.StatusCreated, nil)
	for lang, want := range map[string][]string{
		"fr": {"Appeler le suivant", "En attente", "Poste", "1 en attente · 1 personne", "En direct"},
		"es": {"Llamar al siguiente", "En espera", "Puesto", "1 en espera · 1 persona", "En directo"},
		"pt": {"Chamar o próximo", "Aguardando", "Posto", "1 aguardando · 1 pessoa", "Ao vivo"},
	} {
		l := newCounterLink(t, app, q.ID, map[string]any{"language": lang})
		nav, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := chromedp.Run(nav, chromedp.EmulateViewport(1366, 768), chromedp.Navigate(l.URL)); err != nil {
			t.Fatal(err)
		}
		expr := `document.documentElement.lang === "` + lang + `"`
		for _, w := range want {
			expr += " && document.body.innerText.includes(" + strconv.Quote(w) + ")"
		}
		if err := within(nav, 10*time.Second, expr); err != nil {
			fail(t, nav, "counter-"+lang+"-failed.png", "the console in "+lang, err)
		}
		if lang == "fr" {
			docsShot(t, nav, "counter-fr.png")
		}
		cancel()
	}
}

// TestCounterConsoleFollowsTheFlowInChromium opens the console of a queue
// that tracks no service, allows no reopen, forwards nothing and serves at
// once on next (callOnNext off): no Start, Reopen or Forward button; next
// serves the turn at once and C completes it.
func TestCounterConsoleFollowsTheFlowInChromium(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	var e struct{ ID string }
	app.API(http.MethodPost, "/entities", map[string]any{"name": "Branch Quick"}).Must(http.StatusCreated, &e)
	var q struct {
		ID   string
		Runs []struct{ ID string }
	}
	app.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Quick", "type": "TURN",
		"dispatchFlow": map[string]any{"trackService": false, "allowReopen": false}}).Must(http.StatusCreated, &q)
	app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/turns", map[string]any{}).Must(http.StatusCreated, nil)
	l := newCounterLink(t, app, q.ID, map[string]any{})
	nav, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(nav, chromedp.EmulateViewport(1366, 768), chromedp.Navigate(l.URL)); err != nil {
		t.Fatal(err)
	}
	waitConsole(t, nav, 10*time.Second, "the console", `window.qmsCounter && window.qmsCounter.state === "live" && !document.querySelector("#console").hidden`)
	hidden := func(act string) string { return `document.querySelector('button[data-act="` + act + `"]').hidden` }
	waitConsole(t, nav, time.Second, "the flow's buttons", hidden("start")+" && "+hidden("reopen")+" && "+hidden("forward")+
		` && !`+hidden("complete")+` && !document.querySelector('table[data-group="finished"]') && `+jsHas("#station", "No station"))
	keys(t, nav, "n")
	waitConsole(t, nav, 5*time.Second, "next without a station", consoleFocus("1", "Called"))
	keys(t, nav, "c")
	waitConsole(t, nav, 5*time.Second, "complete without start", `window.qmsCounter.presses[1]?.status === 201 && document.querySelector("#focus-turn").hidden && `+jsHas("#counts", "0 waiting"))

	// callOnNext off (and service tracked): next serves at once.
	app.API(http.MethodPut, "/queues/"+q.ID+"/dispatch-flow", map[string]any{"callOnNext": false, "trackService": true}).Must(http.StatusOK, nil)
	app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/turns", map[string]any{}).Must(http.StatusCreated, nil)
	waitConsole(t, nav, 5*time.Second, "the new flow", `!`+hidden("start")+` && `+jsHas("#counts", "1 waiting"))
	keys(t, nav, "n")
	waitConsole(t, nav, 5*time.Second, "served on next", consoleFocus("2", "Being served"))
}
