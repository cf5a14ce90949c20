package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// contrastJS measures the WCAG 2.x contrast ratio of every visible element
// with text of its own, from the computed styles: the text colour over the
// effective background (the element's and its ancestors' background
// colours, composited from the page down). Large text (24 px, or 18.66 px
// bold) needs 3:1, other text 4.5:1. A running animation (a flashing call)
// is paused and sampled at eight points of its cycle, so every colour it
// passes through is measured, then resumed where it was.
const contrastJS = `(() => {
	const parse = (s) => {
		const m = /rgba?\(([^)]*)\)/.exec(s);
		if (!m) { return null; }
		const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
		return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
	};
	const over = (top, under) => {
		const a = top.a + under.a * (1 - top.a);
		if (a === 0) { return {r: 0, g: 0, b: 0, a: 0}; }
		const mix = (x, y) => (x * top.a + y * under.a * (1 - top.a)) / a;
		return {r: mix(top.r, under.r), g: mix(top.g, under.g), b: mix(top.b, under.b), a};
	};
	const lum = (c) => {
		const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
	};
	const background = (el) => {
		const chain = [];
		for (let e = el; e && e.nodeType === 1; e = e.parentElement) { chain.unshift(e); }
		let bg = {r: 255, g: 255, b: 255, a: 1}; // the canvas
		for (const e of chain) {
			const c = parse(getComputedStyle(e).backgroundColor);
			if (c && c.a > 0) { bg = over(c, bg); }
		}
		return bg;
	};
	const name = (el) => {
		let s = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "");
		if (el.classList.length) { s += "." + [...el.classList].join("."); }
		for (let p = el.parentElement; p && !el.id; p = p.parentElement) {
			if (p.id) { s = "#" + p.id + " " + s; break; }
		}
		return s;
	};
	const ownText = (el) => [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== "");
	const measure = (out, when) => {
		for (const el of document.body.querySelectorAll("*")) {
			if (el.tagName === "SCRIPT" || el.tagName === "STYLE" || !ownText(el)) { continue; }
			if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) { continue; }
			const r = el.getBoundingClientRect();
			if (r.width < 2 || r.height < 2) { continue; } // read by screen readers only
			const cs = getComputedStyle(el);
			const bg = background(el);
			const fg = over(parse(cs.color), bg);
			const L1 = lum(fg), L2 = lum(bg);
			const ratio = (Math.max(L1, L2) + 0.05) / (Math.min(L1, L2) + 0.05);
			const px = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight, 10) >= 700;
			const large = px >= 24 || (px >= 18.66 && bold);
			const need = large ? 3 : 4.5;
			const key = name(el);
			out.checked[key] = true;
			if (ratio < need) {
				out.failures.push(key + " " + JSON.stringify(el.textContent.trim().slice(0, 40)) + when + ": " +
					ratio.toFixed(2) + ":1, needs " + need + ":1 (" + cs.color + " on rgb(" + [bg.r, bg.g, bg.b].map(Math.round).join(", ") + "), " + px + "px" + (bold ? " bold" : "") + ")");
			}
		}
	};
	const out = {checked: {}, failures: [], samples: 1};
	const anims = document.getAnimations().filter((a) => a.playState === "running" || a.playState === "paused");
	if (anims.length === 0) {
		measure(out, "");
	} else {
		const was = anims.map((a) => [a.currentTime, a.playState]);
		anims.forEach((a) => a.pause());
		out.samples = 8;
		for (let k = 0; k < 8; k++) {
			for (const a of anims) {
				const d = a.effect.getComputedTiming().duration;
				a.currentTime = (k / 8) * d;
			}
			measure(out, " (animation at " + k + "/8 of its cycle)");
		}
		anims.forEach((a, i) => { a.currentTime = was[i][0]; if (was[i][1] === "running") { a.play(); } });
	}
	out.checked = Object.keys(out.checked);
	out.failures = [...new Set(out.failures)];
	return out;
})()`

type contrastReport struct {
	Checked, Failures []string
	Samples           int
}

// checkContrast fails the test naming every text element of the page, in
// its current state, under WCAG AA contrast; want are elements that must
// have been measured (so a state the page did not reach cannot pass).
func checkContrast(t *testing.T, ctx context.Context, state string, want ...string) {
	t.Helper()
	var raw json.RawMessage
	if err := chromedp.Run(ctx, chromedp.Evaluate(contrastJS, &raw)); err != nil {
		t.Fatalf("%s: measuring contrast: %v", state, err)
	}
	var r contrastReport
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	checked := strings.Join(r.Checked, " | ")
	for _, w := range want {
		if !strings.Contains(" "+checked+" ", w) {
			t.Errorf("%s: %s was not measured (measured: %s)", state, w, checked)
		}
	}
	for _, f := range r.Failures {
		t.Errorf("%s: contrast under WCAG AA: %s", state, f)
	}
	t.Logf("%s: %d text elements measured (%d sample(s)), %d under AA", state, len(r.Checked), r.Samples, len(r.Failures))
}

// TestBoardContrastInChromium measures the contrast of every visible text
// of the display board, on a TV and on a phone: a call being flashed
// (every colour of the flash), next-up codes and recent calls; intake
// closed (the banner); thirty counters calling at once (the smaller rows);
// and the connection lost, which the board says in words. The call is
// announced in the board's live region.
func TestBoardContrastInChromium(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t)
	var e client.Entity
	app.API(http.MethodPost, "/entities", map[string]any{"name": "Central branch"}).Must(http.StatusCreated, &e)
	stations := []any{}
	for i := 1; i <= 30; i++ {
		stations = append(stations, map[string]any{"label": fmt.Sprintf("Window %d", i)})
	}
	var q struct {
		Stations []struct{ ID, Label string }
		Runs     []struct{ ID string }
	}
	app.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Pickup", "type": "TURN", "stations": stations,
		"preAttention": map[string]any{"questions": []any{map[string]any{"id": "plate", "label": "Car plate"}}},
		"arrivalBoard": map[string]any{"columns": []any{map[string]any{"key": "plate", "label": "Plate"}}},
	}).Must(http.StatusCreated, &q)
	runID := q.Runs[0].ID
	tok := newDisplayToken(t, app, runID)
	next := 0 // the next free station
	call := func() (id, code, station string) {
		t.Helper()
		id, code = takeTicketTurn(t, app, runID, map[string]any{"formResponse": map[string]any{"plate": fmt.Sprintf("QMS-%03d", next)}})
		st := q.Stations[next]
		next++
		app.API(http.MethodPost, "/turns/"+id+"/call", map[string]any{"stationId": st.ID}).Must(http.StatusCreated, nil)
		return id, code, st.Label
	}
	for i := 0; i < 3; i++ { // recently called; three timed services make a wait range
		id, _, _ := call()
		app.API(http.MethodPost, "/turns/"+id+"/start", nil).Must(http.StatusCreated, nil)
		app.API(http.MethodPost, "/turns/"+id+"/complete", nil).Must(http.StatusCreated, nil)
		next = 0 // free again
	}
	for i := 0; i < 3; i++ { // waiting
		takeTicketTurn(t, app, runID, map[string]any{})
	}

	nav, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for _, s := range []struct {
		name string
		w, h int64
	}{{"tv", 1920, 1080}, {"phone", 390, 844}} {
		if err := chromedp.Run(nav, chromedp.EmulateViewport(s.w, s.h), chromedp.Navigate(tok.URL+"?next=3")); err != nil {
			t.Fatal(err)
		}
		if err := within(nav, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live" && window.qmsBoard.boards >= 1`); err != nil {
			t.Fatalf("the board never went live: %v", err)
		}
		_, code, station := call()
		if err := within(nav, 2*time.Second, `!!document.querySelector("#calling-rows tr.fresh") && document.getAnimations().length > 0`); err != nil {
			t.Fatalf("%s: the call is not flashing: %v", s.name, err)
		}
		// The turns before were served at once: the wait is under a
		// minute, said so, never "0 min".
		if err := within(nav, 2*time.Second, `/usual wait under 1 min/.test(document.querySelector("#waiting").innerText)`); err != nil {
			fail(t, nav, "display-board-failed.png", "a wait under a minute", err)
		}
		checkContrast(t, nav, "board, "+s.name+", a call flashing", "td.code", "#calling-rows span.nowrap", "#recent", "#waiting", "#clock", "#connection.connection.live")
		// The live region: screen readers hear each call.
		if err := within(nav, 2*time.Second, `[...document.querySelectorAll("[aria-live]")].some((e) => e.textContent.includes(`+strconv.Quote(code+", go to "+station)+`))`); err != nil {
			t.Fatalf("%s: no live region announced the call: %v", s.name, err)
		}
		screenshot(t, nav, "display-board-"+s.name+"-calling.png")
	}

	// Thirty counters calling: the smaller rows of a busy board.
	for next < len(q.Stations) {
		call()
	}
	if err := chromedp.Run(nav, chromedp.EmulateViewport(1920, 1080), chromedp.Navigate(tok.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live" && document.body.classList.contains("many") && window.qmsBoard.pages > 1`); err != nil {
		t.Fatalf("the busy board does not rotate: %v", err)
	}
	checkContrast(t, nav, "board, tv, many calls", "td.code", "#calling-rows span.nowrap", "#calling-pages.pages")

	// Intake closed: the banner, on a phone.
	if err := chromedp.Run(nav, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	app.API(http.MethodPost, "/queue-runs/"+runID+"/close-intake", nil).Must(http.StatusCreated, nil)
	var waiting struct{ Data []struct{ ID string } }
	app.API(http.MethodGet, "/queue-runs/"+runID+"/turns?status=WAITING", nil).Must(http.StatusOK, &waiting)
	if len(waiting.Data) == 0 {
		t.Fatal("no waiting turn listed")
	}
	// Closing intake raises no event: a customer leaving tells the board.
	app.API(http.MethodPost, "/turns/"+waiting.Data[0].ID+"/cancel", nil).Must(http.StatusCreated, nil)
	if err := within(nav, 5*time.Second, `!document.querySelector("#banner").hidden`); err != nil {
		t.Fatalf("no intake-closed banner: %v", err)
	}
	checkContrast(t, nav, "board, phone, intake closed", "#banner.banner")

	// The server goes away: the board says so in words.
	app.Stop()
	if err := within(nav, 10*time.Second, `window.qmsBoard.state === "reconnecting" && document.querySelector("#connection").innerText.includes("Connection lost")`); err != nil {
		fail(t, nav, "display-board-failed.png", "the connection lost", err)
	}
	checkContrast(t, nav, "board, phone, connection lost", "#connection.connection.down")
}

// TestTicketContrastInChromium measures the contrast of every visible text
// of the ticket page, at phone and TV size, while waiting, called (every
// colour of the flash), finished and expired, and with the connection lost:
// when the server goes away, the page says so plainly. The call is
// announced in the page's live regions. The page at TV size is a centred
// column in large type, nothing wider than the screen.
func TestTicketContrastInChromium(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 100000
		c.Tickets.ExpireAfter = time.Second
	}))
	q := boardQueue(t, app)
	takeTicketTurn(t, app, q.RunID, map[string]any{})
	mine, code := takeTicketTurn(t, app, q.RunID, map[string]any{})
	l := newTicketLink(t, app, mine, nil)
	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2))
	tv := chromedp.EmulateViewport(1920, 1080)

	nav, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Run(nav, phone, chromedp.Navigate(l.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsTicket && window.qmsTicket.state === "live" && window.qmsTicket.tickets >= 1`); err != nil {
		t.Fatalf("the ticket page never went live: %v", err)
	}
	both := func(state string, shot string, want ...string) {
		t.Helper()
		checkContrast(t, nav, "ticket, phone, "+state, want...)
		if err := chromedp.Run(nav, tv); err != nil {
			t.Fatal(err)
		}
		checkContrast(t, nav, "ticket, tv, "+state, want...)
		wideScreen(t, nav, state)
		if shot != "" {
			screenshot(t, nav, shot)
		}
		if err := chromedp.Run(nav, phone); err != nil {
			t.Fatal(err)
		}
	}
	both("waiting", "ticket-page-tv-waiting.png", "#code.code", "#status.status", "#ahead.ahead", "#number-label.label", "#connection.connection.live", "#alerts.secondary")

	// Called: the yellow panel flashing.
	app.API(http.MethodPost, "/turns/"+mine+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
	if err := within(nav, 2*time.Second, `document.body.classList.contains("flash") && !document.querySelector("#called").hidden && document.getAnimations().length > 0`); err != nil {
		t.Fatalf("the call is not flashing: %v", err)
	}
	// Live regions: the call panel is an alert, and the announcement is
	// spoken from an aria-live region.
	var live struct {
		CalledRole string
		Announced  bool
	}
	if err := within(nav, 2*time.Second, `document.querySelector("#announce[aria-live]").textContent.includes(`+strconv.Quote(code+". Go to "+q.StationLabel)+`)`); err != nil {
		t.Fatalf("no live region announced the call: %v", err)
	}
	if err := chromedp.Run(nav, chromedp.Evaluate(`({calledRole: document.querySelector("#called").getAttribute("role") || "", announced: true})`, &live)); err != nil {
		t.Fatal(err)
	}
	if live.CalledRole != "alert" {
		t.Fatalf("the call panel's role is %q, want alert (an assertive live region)", live.CalledRole)
	}
	both("called", "ticket-page-tv-called.png", "#called-where.where", "#called-at.when", "#code.code")

	// Finished, then expired.
	app.API(http.MethodPost, "/turns/"+mine+"/start", nil).Must(http.StatusCreated, nil)
	app.API(http.MethodPost, "/turns/"+mine+"/complete", nil).Must(http.StatusCreated, nil)
	if err := within(nav, 2*time.Second, `!document.querySelector("#ended").hidden`); err != nil {
		t.Fatalf("no final state: %v", err)
	}
	both("completed", "", "#ended.ended", "#code.code")
	if err := within(nav, 15*time.Second, `window.qmsTicket.state === "expired"`); err != nil {
		t.Fatalf("the link did not expire: %v", err)
	}
	both("expired", "", "#message-title", "#message-text")

	// The connection lost: the server goes away under an open page.
	other, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	ol := newTicketLink(t, app, other, nil)
	if err := chromedp.Run(nav, chromedp.Navigate(ol.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsTicket.state === "live" && window.qmsTicket.tickets >= 1`); err != nil {
		t.Fatalf("the second ticket never went live: %v", err)
	}
	// One service timed is no estimate: the page says so in words, never
	// a default figure or one service's time dressed up as "expected".
	if err := within(nav, 2*time.Second, `document.querySelector("#wait").innerText === "Shown once a few customers have been served"`); err != nil {
		fail(t, nav, "ticket-page-failed.png", "no wait figure before three timed services", err)
	}
	stopped := time.Now()
	app.Stop()
	lost := `document.body.dataset.state === "reconnecting" && document.querySelector("#connection").innerText.includes("Connection lost") && !document.querySelector("#ticket").hidden`
	if err := within(nav, 10*time.Second, lost); err != nil {
		fail(t, nav, "ticket-page-failed.png", "the connection lost", err)
	}
	t.Logf("the page said the connection was lost %v after the server stopped", time.Since(stopped).Round(time.Millisecond))
	both("connection lost", "", "#connection.connection.down", "#code.code")
	screenshot(t, nav, "ticket-page-connection-lost.png")
}

// wideScreen checks the ticket page on a TV: nothing wider than the screen,
// the column centred, the code in large type.
func wideScreen(t *testing.T, ctx context.Context, state string) {
	t.Helper()
	var m struct {
		W, ScrollW, Left, Right, CodePx, ColumnW float64
	}
	if err := chromedp.Run(ctx, chromedp.Evaluate(`(() => {
		const main = document.querySelector("main:not([hidden])") || document.querySelector("#message > div");
		const r = main.getBoundingClientRect();
		const code = document.querySelector("#code");
		return {w: innerWidth, scrollW: document.documentElement.scrollWidth, left: r.left, right: r.right, columnW: r.width,
			codePx: code && code.checkVisibility() ? parseFloat(getComputedStyle(code).fontSize) : 0};
	})()`, &m)); err != nil {
		t.Fatal(err)
	}
	if m.ScrollW > m.W {
		t.Errorf("ticket, tv, %s: %v px wide on a %v px screen", state, m.ScrollW, m.W)
	}
	if d := m.Left - (m.W - m.Right); d > 2 || d < -2 {
		t.Errorf("ticket, tv, %s: the column is off centre (%v px left, %v px right)", state, m.Left, m.W-m.Right)
	}
	if m.CodePx != 0 && m.CodePx < 140 {
		t.Errorf("ticket, tv, %s: the code is %v px, too small across a room", state, m.CodePx)
	}
	if m.CodePx != 0 && m.ColumnW < 700 {
		t.Errorf("ticket, tv, %s: the column is %v px wide on a 1920 px screen", state, m.ColumnW)
	}
}

// TestBoardInSpanishInChromium: the board speaks Spanish when the link
// says ?lang=es, and when the browser's language is Spanish and the link
// names none.
func TestBoardInSpanishInChromium(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t)
	q := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)
	for i := 0; i < 3; i++ {
		takeTicketTurn(t, app, q.RunID, map[string]any{})
	}
	spanish := `window.qmsBoard && window.qmsBoard.state === "live" && document.documentElement.lang === "es" &&
		document.querySelector("#waiting").innerText.includes("3 en espera") &&
		document.querySelector("#calling-title").innerText.includes("LLAMANDO AHORA") &&
		document.querySelector("#connection").innerText === "En directo"`

	nav, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(nav, chromedp.EmulateViewport(1280, 720), chromedp.Navigate(tok.URL+"?lang=es")); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, spanish); err != nil {
		fail(t, nav, "display-board-es-failed.png", "?lang=es", err)
	}
	screenshot(t, nav, "display-board-es.png")

	// No ?lang=: the browser's languages choose (Accept-Language and
	// navigator.languages, as a Spanish phone or TV sends them).
	es, cancelES := chromedp.NewContext(ctx)
	defer cancelES()
	if err := chromedp.Run(es,
		emulation.SetUserAgentOverride("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36").WithAcceptLanguage("es-MX,es;q=0.9"),
		chromedp.EmulateViewport(1280, 720),
		chromedp.Navigate(tok.URL),
	); err != nil {
		t.Fatal(err)
	}
	var langs []string
	if err := chromedp.Run(es, chromedp.Evaluate(`navigator.languages`, &langs)); err != nil {
		t.Fatal(err)
	}
	if len(langs) == 0 || langs[0] != "es-MX" {
		t.Fatalf("the browser's languages are %v, want es-MX first", langs)
	}
	if err := within(es, 10*time.Second, spanish); err != nil {
		fail(t, es, "display-board-es-failed.png", "a Spanish browser", err)
	}
	// And English for an English browser: the fallback is not stuck.
	en, cancelEN := chromedp.NewContext(ctx)
	defer cancelEN()
	if err := chromedp.Run(en,
		emulation.SetUserAgentOverride("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36").WithAcceptLanguage("en-GB,en;q=0.9"),
		chromedp.Navigate(tok.URL),
	); err != nil {
		t.Fatal(err)
	}
	if err := within(en, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live" && document.documentElement.lang === "en" && document.querySelector("#waiting").innerText.includes("3 waiting")`); err != nil {
		fail(t, en, "display-board-en-failed.png", "an English browser", err)
	}
}

// TestJoinContrastInChromium measures the contrast of every visible text
// of the join page on a phone, in each of its states: the form (a choice,
// the access code, the phone, the location note), refusals beside their
// fields, the kiosk's number, a closed queue, and a revoked link; and it
// checks that a refusal is spoken: each field's error is an alert, and
// the page's live region says what to do. The ticket page's arrival note
// is measured too.
func TestJoinContrastInChromium(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 100000
		c.Join.PerAddressPerMinute = 100000
	}))
	q := joinQueue(t, app, "Pharmacy", map[string]any{
		"geofence":           map[string]any{"radiusMeters": 200, "requireToTake": true},
		"accessCodeRequired": true,
		"capacity":           map[string]any{"maxTurns": 1, "waitlistEnabled": true},
		"carpool":            map[string]any{"enabled": true, "autoArriveOnGeofence": true},
	})
	app.API(http.MethodPost, "/access-codes", map[string]any{"code": "OK-1"}).Must(http.StatusCreated, nil)
	takeTicketTurn(t, app, q.RunID, map[string]any{"formResponse": answers("Pick up"), "accessCode": "OK-1"})
	l := newJoinLink(t, app, q.ID, map[string]any{"kiosk": true})
	nav, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Run(nav, phoneSize, chromedp.Navigate(l.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsJoin && window.qmsJoin.state === "ready"`); err != nil {
		t.Fatalf("the join page never loaded: %v", err)
	}
	checkContrast(t, nav, "join, form", "#open-state.open-state.open", "#waiting.waiting", "#full.note", "#instructions-text",
		"#take.primary", "#location-hint.hint", "#phone-hint.hint", "#people-less.step", "#privacy.note.small")

	// Refused: every error beside its field, each an alert; the live
	// region says to check them.
	if err := chromedp.Run(nav, chromedp.Click("#take", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 2*time.Second, visible("#err-q0")+" && "+visible("#err-accessCode")); err != nil {
		t.Fatalf("no field errors: %v", err)
	}
	var live struct {
		Roles     []string
		Announced string
		Polite    string
	}
	if err := chromedp.Run(nav, chromedp.Evaluate(`({
		roles: [...document.querySelectorAll(".field-error:not([hidden])")].map(e => e.getAttribute("role") + ":" + e.id),
		announced: document.querySelector("#announce").textContent,
		polite: document.querySelector("#announce").getAttribute("aria-live") || ""})`, &live)); err != nil {
		t.Fatal(err)
	}
	if len(live.Roles) < 3 || live.Announced != "Please check the fields marked." || live.Polite == "" {
		t.Fatalf("refusals not spoken: %+v", live)
	}
	for _, r := range live.Roles {
		if !strings.HasPrefix(r, "alert:") {
			t.Errorf("a field error that is not an alert: %s", r)
		}
	}
	var described bool
	if err := chromedp.Run(nav, chromedp.Evaluate(`document.querySelector("#accessCode").getAttribute("aria-describedby").includes("err-accessCode") &&
		document.querySelector("#q1").getAttribute("aria-describedby") === "err-q1" && document.querySelector("#q1").getAttribute("aria-invalid") === "true"`, &described)); err != nil || !described {
		t.Fatalf("a field is not described by its error (%v)", err)
	}
	checkContrast(t, nav, "join, refused", "#err-q0.field-error", "#err-q1.field-error", "#err-accessCode.field-error")

	// The kiosk's number.
	u, _ := url.Parse(app.BaseURL)
	atPlace(t, nav, u.Scheme+"://"+u.Host, solLat, solLng, 10)
	if err := chromedp.Run(nav, chromedp.Click(`#q0-0`, chromedp.ByQuery), chromedp.SendKeys(`#q1`, "Ana", chromedp.ByQuery),
		chromedp.SendKeys(`#accessCode`, "OK-1", chromedp.ByQuery), chromedp.Click("#take", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsJoin.state === "kiosk-done"`); err != nil {
		t.Fatalf("no kiosk number: %v", err)
	}
	if err := within(nav, 2*time.Second, `document.querySelector("#announce").textContent.startsWith("Your number is ")`); err != nil {
		t.Fatalf("the kiosk's number was not announced: %v", err)
	}
	checkContrast(t, nav, "join, kiosk number", "#kiosk-code.code", "#kiosk-code-label.label", "#kiosk-next.secondary")

	// The ticket page's arrival note (the turn of the kiosk, opened on a
	// phone at the door).
	var kt client.TurnPage
	app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/turns?limit=10", nil).Must(http.StatusOK, &kt)
	tl := newTicketLink(t, app, kt.Data[len(kt.Data)-1].ID, nil)
	if err := chromedp.Run(nav, chromedp.Navigate(tl.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsArrive && window.qmsArrive.arrived === true`); err != nil {
		t.Fatalf("no arrival: %v", err)
	}
	checkContrast(t, nav, "ticket, arrival note", "#arrive-note.note")

	// Closed, then revoked.
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/close", nil).Must(http.StatusCreated, nil)
	if err := chromedp.Run(nav, chromedp.Navigate(l.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsJoin && window.qmsJoin.state === "closed"`); err != nil {
		t.Fatalf("not closed: %v", err)
	}
	checkContrast(t, nav, "join, closed", "#open-state.open-state.closed")
	app.API(http.MethodDelete, "/join-links/"+l.ID, nil).Must(http.StatusOK, nil)
	if err := chromedp.Run(nav, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `window.qmsJoin && window.qmsJoin.state === "revoked"`); err != nil {
		t.Fatalf("not revoked: %v", err)
	}
	var role string
	if err := chromedp.Run(nav, chromedp.Evaluate(`document.querySelector("#message").getAttribute("role")`, &role)); err != nil || role != "alert" {
		t.Fatalf("the revoked message's role is %q (%v), want alert", role, err)
	}
	checkContrast(t, nav, "join, revoked", "#message-title", "#message-text")
}
