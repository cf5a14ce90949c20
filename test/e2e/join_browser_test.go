package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// phoneSize is the viewport of the join tests: a 390×844 phone (an
// iPhone 12 to 14), at its pixel ratio.
var phoneSize = chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2))

// atPlace puts the tab's device at lat, lng with the given accuracy
// (Chromium's geolocation override), and lets origin read it.
func atPlace(t *testing.T, ctx context.Context, origin string, lat, lng, accuracy float64) {
	t.Helper()
	if err := chromedp.Run(ctx,
		chromedp.ActionFunc(func(ctx context.Context) error {
			return cdpbrowser.GrantPermissions([]cdpbrowser.PermissionType{cdpbrowser.PermissionTypeGeolocation}).WithOrigin(origin).
				Do(cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser))
		}),
		emulation.SetGeolocationOverride().WithLatitude(lat).WithLongitude(lng).WithAccuracy(accuracy),
	); err != nil {
		t.Fatalf("geolocation override: %v", err)
	}
}

// locationRefused makes origin's location permission "denied", as a
// customer who tapped "Block" would.
func locationRefused(t *testing.T, ctx context.Context, origin string) {
	t.Helper()
	if err := chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		return cdpbrowser.SetPermission(&cdpbrowser.PermissionDescriptor{Name: "geolocation"}, cdpbrowser.PermissionSettingDenied).WithOrigin(origin).
			Do(cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser))
	})); err != nil {
		t.Fatalf("deny location: %v", err)
	}
}

// turnsOf counts the run's turns through the API.
func turnsOf(t *testing.T, app *apptest.App, runID string) []client.Turn {
	t.Helper()
	var p client.TurnPage
	app.API(http.MethodGet, "/queue-runs/"+runID+"/turns?limit=100", nil).Must(http.StatusOK, &p)
	return p.Data
}

func textOf(sel, s string) string {
	return `(document.querySelector(` + strconv.Quote(sel) + `)?.innerText || "").includes(` + strconv.Quote(s) + `)`
}

func visible(sel string) string {
	return `(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); return !!e && !e.hidden && e.checkVisibility(); })()`
}

// TestJoinPageInChromium takes turns the way customers do, on a phone-sized
// headless Chromium, on each storage: it scans (opens) a join link, sees
// the queue, answers, and lands on its live ticket page; a choice whose
// option carries a priority gives the turn that priority and prefix; every
// refusal is shown beside its field; a double tap takes one turn; the
// geofence (Chromium's geolocation override) refuses a phone 1.1 km away
// with the distance, explains a refused permission, and takes the phone
// nearby; the open ticket page marks its turn arrived when inside the
// radius; a full queue puts the next on the waiting list; a closed queue
// and a revoked link say so; a link in Spanish speaks Spanish; a kiosk
// resets after each join. It measures "Take a number" to the ticket page,
// and keeps a screenshot of every state.
func TestJoinPageInChromium(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		ctx := browser(t)
		app := start(t, apptest.WithConfig(func(c *config.Config) {
			c.RateLimit.PerMinute = 100000
			c.Join.PerAddressPerMinute = 100000
		}))
		u, _ := url.Parse(app.BaseURL)
		origin := u.Scheme + "://" + u.Host
		suffix := "-" + strings.Split(t.Name(), "/")[1] + ".png"
		shot := func(ctx context.Context, name string) { screenshot(t, ctx, "join-"+name+suffix) }

		nav, cancel := context.WithTimeout(ctx, 240*time.Second)
		defer cancel()
		open := func(link string) {
			t.Helper()
			if err := chromedp.Run(nav, phoneSize, chromedp.Navigate(link)); err != nil {
				t.Fatalf("open %s: %v", link, err)
			}
			if err := within(nav, 10*time.Second, `window.qmsJoin && ["ready", "closed", "revoked", "invalid"].includes(window.qmsJoin.state)`); err != nil {
				fail(t, nav, "join-failed"+suffix, "the join page never loaded", err)
			}
		}
		take := func() {
			t.Helper()
			if err := chromedp.Run(nav, chromedp.Click("#take", chromedp.ByQuery)); err != nil {
				t.Fatal(err)
			}
		}
		onTicket := `location.pathname.startsWith("/ticket/") && window.qmsTicket && window.qmsTicket.state === "live" && window.qmsTicket.tickets >= 1`

		// 1. A pharmacy: a choice with a priority, a phone.
		q := joinQueue(t, app, "Pharmacy", map[string]any{"whatsappCapture": true,
			"sla": map[string]any{"maxWaitMinutes": 30}})
		takeTicketTurn(t, app, q.RunID, map[string]any{"formResponse": answers("Pick up")}) // someone waits already
		l := newJoinLink(t, app, q.ID, map[string]any{"phoneRegion": "ES"})
		open(l.URL)
		if err := within(nav, 2*time.Second, textOf("#queue", "Pharmacy")+" && "+textOf("#branch", "Branch Pharmacy")+" && "+
			textOf("#open-state", "Open")+" && "+textOf("#waiting", "1 person waiting")+" && "+textOf("#instructions-text", "prescription")+
			" && "+visible("#field-phone")+" && !"+visible("#field-accessCode")+" && !"+visible("#field-location")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the pharmacy's page", err)
		}
		var wide bool
		if err := chromedp.Run(nav, chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &wide)); err != nil || wide {
			t.Fatalf("the join page is wider than the phone (%v)", err)
		}
		shot(nav, "form")

		// Nothing answered: the required questions say so, beside them.
		take()
		if err := within(nav, 2*time.Second, visible("#err-q0")+" && "+textOf("#err-q0", "Please answer this.")+" && "+visible("#err-q1")+" && !"+visible("#err-q2")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the required questions", err)
		}
		// A phone Spain does not dial: the server's refusal, beside the phone.
		if err := chromedp.Run(nav,
			chromedp.Click(`#q0-1`, chromedp.ByQuery),
			chromedp.SendKeys(`#q1`, "Ana", chromedp.ByQuery),
			chromedp.SendKeys(`#phone`, "600 12 34", chromedp.ByQuery),
		); err != nil {
			t.Fatal(err)
		}
		take()
		if err := within(nav, 5*time.Second, visible("#err-phone")+" && "+textOf("#err-phone", "not a phone number we can reach")+
			` && document.querySelector("#phone").getAttribute("aria-invalid") === "true" && !`+visible("#err-q0")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the phone refused", err)
		}
		shot(nav, "field-errors")
		if len(turnsOf(t, app, q.RunID)) != 1 {
			t.Fatal("a refused form took a turn")
		}

		// Right: "Take a number" to the live ticket page, timed.
		if err := chromedp.Run(nav, chromedp.SetValue(`#phone`, "600 12 34 56", chromedp.ByQuery), chromedp.Click("#notifyWhatsapp", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		tapped := time.Now()
		take()
		if err := within(nav, 10*time.Second, onTicket); err != nil {
			fail(t, nav, "join-failed"+suffix, "landing on the ticket page", err)
		}
		t.Logf("\"Take a number\" to the live ticket page: %v", time.Since(tapped).Round(time.Millisecond))
		ts := turnsOf(t, app, q.RunID)
		if len(ts) != 2 {
			t.Fatalf("%d turns after one join, want 2", len(ts))
		}
		mine := ts[1]
		if mine.Priority != "HIGH" || !strings.HasPrefix(mine.DisplayCode, "U") || mine.Phone == nil || *mine.Phone != "+34600123456" || !mine.NotifyWhatsapp {
			t.Fatalf("the joined turn: %+v", mine)
		}
		if err := within(nav, 2*time.Second, textOf("#code", mine.DisplayCode)+" && "+textOf("#ahead", "You are next")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the ticket page's turn", err)
		}
		shot(nav, "ticket")

		// A double tap: the page's own submit, twice at once, one key.
		open(l.URL)
		if err := chromedp.Run(nav, chromedp.Click(`#q0-0`, chromedp.ByQuery), chromedp.SendKeys(`#q1`, "Bo", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Run(nav, chromedp.Evaluate(`window.qmsJoin.submit(true); window.qmsJoin.submit(true); true`, nil)); err != nil {
			t.Fatal(err)
		}
		if err := within(nav, 10*time.Second, onTicket); err != nil {
			fail(t, nav, "join-failed"+suffix, "the double tap's ticket page", err)
		}
		if n := len(turnsOf(t, app, q.RunID)); n != 3 {
			t.Fatalf("a double tap took %d turns, want 1 (%d in the run)", n-2, n)
		}

		// 2. A drive-in, in Spanish: access code, geofence, capacity 1
		// with a waitlist, auto-arrival.
		d := joinQueue(t, app, "Recogida", map[string]any{
			"geofence":           map[string]any{"radiusMeters": 200, "requireToTake": true},
			"accessCodeRequired": true,
			"capacity":           map[string]any{"maxTurns": 1, "waitlistEnabled": true},
			"carpool":            map[string]any{"enabled": true, "autoArriveOnGeofence": true},
			"preAttention": map[string]any{"instructions": "Quédese en su coche.", "questions": []any{
				map[string]any{"id": "plate", "label": "Matrícula", "required": true}}},
		})
		app.API(http.MethodPost, "/access-codes", map[string]any{"code": "COCHE-7"}).Must(http.StatusCreated, nil)
		dl := newJoinLink(t, app, d.ID, map[string]any{"language": "es"})
		atPlace(t, nav, origin, solLat+0.01, solLng, 20) // 1.1 km north
		open(dl.URL)
		if err := within(nav, 2*time.Second, `document.documentElement.lang === "es" && `+textOf("#open-state", "Abierto")+" && "+textOf("#take", "Pedir turno")+
			" && "+visible("#field-accessCode")+" && "+visible("#field-location")+" && "+textOf("#location-hint", "200 m")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the drive-in's page in Spanish", err)
		}
		shot(nav, "es-form")
		if err := chromedp.Run(nav, chromedp.SendKeys(`#q0`, "1234 BCD", chromedp.ByQuery), chromedp.SendKeys(`#accessCode`, "NOPE", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		take()
		if err := within(nav, 10*time.Second, visible("#err-location")+" && "+textOf("#err-location", "Estás a unos 1112 m")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the phone outside the fence", err)
		}
		shot(nav, "es-outside")
		atPlace(t, nav, origin, solLat+0.0005, solLng, 15) // 56 m
		take()
		if err := within(nav, 10*time.Second, visible("#err-accessCode")+" && "+textOf("#err-accessCode", "no es válido")+" && !"+visible("#err-location")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the access code refused", err)
		}
		if err := chromedp.Run(nav, chromedp.SetValue(`#accessCode`, "COCHE-7", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		take()
		if err := within(nav, 10*time.Second, onTicket); err != nil {
			fail(t, nav, "join-failed"+suffix, "the drive-in's ticket page", err)
		}
		// Inside the radius with the page open: arrived, once.
		if err := within(nav, 10*time.Second, `window.qmsArrive && window.qmsArrive.arrived === true && `+textOf("#arrive-note", "Tu llegada está marcada")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the auto-arrival", err)
		}
		if err := within(nav, 2*time.Second, textOf("#connection", "En directo")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the ticket page's footer in Spanish", err)
		}
		shot(nav, "es-ticket-arrived")
		dt := turnsOf(t, app, d.RunID)
		if len(dt) != 1 || dt[0].ArrivedAt == nil || dt[0].Status != "WAITING" {
			t.Fatalf("the drive-in's turn: %+v", dt)
		}

		// Full: the next goes on the waiting list.
		open(dl.URL)
		if err := within(nav, 2*time.Second, visible("#full")+" && "+textOf("#full", "lista de espera")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the full queue's note", err)
		}
		shot(nav, "es-full-waitlist")
		if err := chromedp.Run(nav, chromedp.SendKeys(`#q0`, "5678 FGH", chromedp.ByQuery), chromedp.SendKeys(`#accessCode`, "COCHE-7", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		take()
		if err := within(nav, 10*time.Second, onTicket+" && "+textOf("#status", "En lista de espera")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the waitlisted ticket", err)
		}
		shot(nav, "es-ticket-waitlisted")

		// Location refused: a plain explanation, nothing taken.
		locationRefused(t, nav, origin)
		open(dl.URL)
		if err := chromedp.Run(nav, chromedp.SendKeys(`#q0`, "9999 XYZ", chromedp.ByQuery), chromedp.SendKeys(`#accessCode`, "COCHE-7", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		take()
		if err := within(nav, 10*time.Second, textOf("#err-location", "La ubicación está bloqueada")); err != nil {
			fail(t, nav, "join-failed"+suffix, "location refused", err)
		}
		shot(nav, "es-location-refused")
		if n := len(turnsOf(t, app, d.RunID)); n != 2 {
			t.Fatalf("%d turns in the drive-in, want 2", n)
		}

		// 3. Closed, and outside its hours.
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/close", nil).Must(http.StatusCreated, nil)
		open(l.URL)
		if err := within(nav, 2*time.Second, `window.qmsJoin.state === "closed" && `+textOf("#open-state", "Closed today")+" && !"+visible("#form")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the closed queue", err)
		}
		shot(nav, "closed")
		hq := newLiveQueue(t, app, "Mornings", map[string]any{"schedule": map[string]any{"mode": "weekly",
			"weekly": []any{map[string]any{"day": int(time.Now().UTC().Add(48 * time.Hour).Weekday()), "open": "09:00", "close": "10:00"}}}})
		open(newJoinLink(t, app, hq.ID, nil).URL)
		if err := within(nav, 2*time.Second, textOf("#open-state", "Closed now")+" && "+visible("#opens-at")+" && "+textOf("#opens-at", "Opens")+" && "+textOf("#opens-at", "09:00")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the queue outside its hours", err)
		}
		shot(nav, "outside-hours")

		// 4. Revoked: an open page's next join says so, and the link too.
		k := joinQueue(t, app, "Lobby", nil)
		kl := newJoinLink(t, app, k.ID, map[string]any{"kiosk": true, "label": "Tablet"})
		open(kl.URL)
		if err := chromedp.Run(nav, chromedp.Click(`#q0-0`, chromedp.ByQuery), chromedp.SendKeys(`#q1`, "Cy", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		// Kiosk first: the number and its QR code, then a clean form.
		if err := chromedp.Run(nav, chromedp.EvaluateAsDevTools(`window.qmsJoin.kioskResetMs = 60000; true`, nil)); err != nil {
			t.Fatal(err)
		}
		take()
		if err := within(nav, 10*time.Second, `window.qmsJoin.state === "kiosk-done" && `+visible("#kiosk-done")+` && document.querySelector("#kiosk-qr").complete && document.querySelector("#kiosk-qr").naturalWidth > 0`); err != nil {
			fail(t, nav, "join-failed"+suffix, "the kiosk's number", err)
		}
		kt := turnsOf(t, app, k.RunID)
		if len(kt) != 1 {
			t.Fatalf("kiosk: %d turns", len(kt))
		}
		if err := within(nav, time.Second, textOf("#kiosk-code", kt[0].DisplayCode)); err != nil {
			fail(t, nav, "join-failed"+suffix, "the kiosk's code", err)
		}
		shot(nav, "kiosk-done")
		if err := chromedp.Run(nav, chromedp.Click("#kiosk-next", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if err := within(nav, 5*time.Second, `window.qmsJoin.resets === 1 && window.qmsJoin.state === "ready" && `+visible("#form")+
			` && document.querySelector("#q1").value === "" && !document.querySelector("#q0-0").checked && !`+visible("#kiosk-done")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the kiosk's reset", err)
		}
		// The next person: a new turn, not a replay of the last one's key.
		if err := chromedp.Run(nav, chromedp.Click(`#q0-0`, chromedp.ByQuery), chromedp.SendKeys(`#q1`, "Cy", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		take()
		if err := within(nav, 10*time.Second, `window.qmsJoin.state === "kiosk-done"`); err != nil {
			fail(t, nav, "join-failed"+suffix, "the kiosk's second number", err)
		}
		if n := len(turnsOf(t, app, k.RunID)); n != 2 {
			t.Fatalf("the kiosk's second person: %d turns, want 2", n)
		}
		if err := chromedp.Run(nav, chromedp.Click("#kiosk-next", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if err := within(nav, 5*time.Second, `window.qmsJoin.resets === 2 && window.qmsJoin.state === "ready"`); err != nil {
			fail(t, nav, "join-failed"+suffix, "the kiosk's second reset", err)
		}
		app.API(http.MethodDelete, "/join-links/"+kl.ID, nil).Must(http.StatusOK, nil)
		if err := chromedp.Run(nav, chromedp.Click(`#q0-0`, chromedp.ByQuery), chromedp.SendKeys(`#q1`, "Di", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		take()
		if err := within(nav, 10*time.Second, `window.qmsJoin.state === "revoked" && `+textOf("#message", "This link is no longer in use")); err != nil {
			fail(t, nav, "join-failed"+suffix, "the link revoked under an open page", err)
		}
		shot(nav, "revoked")
		if n := len(turnsOf(t, app, k.RunID)); n != 2 {
			t.Fatalf("a revoked link took a turn: %d", n)
		}
		open(kl.URL)
		if err := within(nav, 2*time.Second, `window.qmsJoin.state === "revoked"`); err != nil {
			fail(t, nav, "join-failed"+suffix, "the revoked link reopened", err)
		}

		// 5. The poster, on A4.
		if err := chromedp.Run(nav, chromedp.EmulateViewport(794, 1123), chromedp.Navigate(dl.URL+"/poster")); err != nil {
			t.Fatal(err)
		}
		if err := within(nav, 5*time.Second, textOf("h1", "Recogida")+" && "+textOf(".title", "Pide tu turno aquí")+
			` && document.querySelectorAll(".steps li").length === 3 && !!document.querySelector(".qr svg")`); err != nil {
			fail(t, nav, "join-failed"+suffix, "the poster", err)
		}
		shot(nav, "poster-a4")
	})
}
