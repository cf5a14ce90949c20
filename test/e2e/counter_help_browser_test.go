package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// backClock is the system clock set back by an offset: turns taken while
// it is set back have waited that much longer by the real clock, which the
// browser's pages read (the console's wait times and SLA marks).
type backClock struct{ back atomic.Int64 }

func (c *backClock) Now() time.Time {
	return time.Now().Add(-time.Duration(c.back.Load())).UTC().Truncate(time.Microsecond)
}

// TestCounterHelpAndSLAInChromium, in headless Chromium on each storage:
// two counters' consoles (on PostgreSQL the second on another process of
// the same database), the waiting-room board and a customer's ticket page.
// The board marks the two turns that have waited past the queue's 15-minute
// target (the count in words, a sign on each of their codes next up, words
// for screen readers) and not the fresh one, and the consoles mark the same
// rows. The customer presses "I need help": both consoles show the request
// (the time is logged) and announce it; the first counter answers with a
// quick reply: it leaves both consoles and the customer's page shows the
// reply.
func TestCounterHelpAndSLAInChromium(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		ctx := browser(t)
		clock := &backClock{}
		limit := apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 })
		app := start(t, limit, apptest.WithClock(clock))
		// The second counter's process: another process of the same
		// database on PostgreSQL (the request must cross processes), the
		// same process in memory (there is no other).
		other := app
		if app.Config.Database.URL != "" {
			other = apptest.PostgresAt(t, app.Config.Database.URL, limit, apptest.WithClock(clock))
		}

		q := newLiveQueue(t, app, "Help desk", map[string]any{
			"help": map[string]any{"enabled": true, "quickReplies": []string{"On my way", "Please come to the counter"}},
			"sla":  map[string]any{"maxWaitMinutes": 15}})
		// Two turns taken 20 minutes ago, one now.
		clock.back.Store(int64(20 * time.Minute))
		_, late1 := takeTicketTurn(t, app, q.RunID, map[string]any{})
		_, late2 := takeTicketTurn(t, app, q.RunID, map[string]any{})
		clock.back.Store(0)
		fresh, freshCode := takeTicketTurn(t, app, q.RunID, map[string]any{})
		ticket := newTicketLink(t, app, fresh, nil)
		var board client.DisplayTokenCreated
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/display-tokens", map[string]any{"label": "Lobby", "nextUp": 3}).
			Must(http.StatusCreated, &board)
		desk1 := newCounterLink(t, app, q.ID, map[string]any{"label": "Desk 1"})
		desk2 := newCounterLink(t, app, q.ID, map[string]any{"label": "Desk 2"})

		// The board and the phone on another host name: their streams do
		// not share the counters' six connections per host in this one
		// browser (see TestCounterConsoleInChromium).
		elsewhere := strings.NewReplacer("127.0.0.1", "localhost")
		laptop := ctx
		if err := chromedp.Run(laptop, chromedp.EmulateViewport(1366, 768), chromedp.Navigate(desk1.URL)); err != nil {
			t.Fatal(err)
		}
		tablet, cancelTablet := newWindow(t, ctx)
		defer cancelTablet()
		if err := chromedp.Run(tablet, chromedp.EmulateViewport(1280, 800),
			chromedp.Navigate(strings.Replace(desk2.URL, app.BaseURL, other.BaseURL, 1))); err != nil {
			t.Fatal(err)
		}
		tv, cancelTV := newWindow(t, ctx)
		defer cancelTV()
		if err := chromedp.Run(tv, chromedp.EmulateViewport(1280, 720), chromedp.Navigate(elsewhere.Replace(board.URL))); err != nil {
			t.Fatal(err)
		}
		phone, cancelPhone := newWindow(t, ctx)
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

		// The board: "2 waiting over 15 min" with its sign, and the two
		// late codes next up marked (a sign, and words a screen reader
		// reads), the fresh one not.
		code := func(c string) string {
			return `[...document.querySelectorAll("#waiting .next .code")].find((e) => e.firstChild && e.textContent.includes(` + strconv.Quote(c) + `))`
		}
		marked := func(c string) string {
			return `(() => { const e = ` + code(c) + `; return !!e && e.classList.contains("over") && e.querySelector(".sign")?.textContent === "\u26a0" && ` +
				`e.querySelector(".sr-only")?.textContent.includes("waiting over 15 min"); })()`
		}
		if err := within(tv, 5*time.Second, jsHas("#waiting", "3 waiting")+` && `+jsHas("#waiting .over-sla", "\u26a0 2 waiting over 15 min")+
			` && `+marked(late1)+` && `+marked(late2)+` && !!`+code(freshCode)+` && !`+code(freshCode)+`.classList.contains("over")`+
			` && window.qmsBoard.overSla.count === 2`); err != nil {
			fail(t, tv, "board-over-sla-failed.png", "the board's over-target marks", err)
		}
		checkContrast(t, tv, "the board with turns over the target", "sla-mark")
		docsShot(t, tv, "display-board-over-sla.png")

		// The consoles mark the same rows.
		slaRow := func(c string) string {
			return `[...document.querySelectorAll('table[data-group="waiting"] tr.row')].some((r) => r.querySelector("td.code-cell")?.firstChild?.textContent === ` +
				strconv.Quote(c) + ` && !!r.querySelector(".sla[aria-label]"))`
		}
		consoles := []struct {
			name string
			nav  context.Context
		}{{"laptop", laptop}, {"tablet", tablet}}
		for _, c := range consoles {
			waitConsole(t, c.nav, 5*time.Second, "the SLA marks on the "+c.name,
				slaRow(late1)+` && `+slaRow(late2)+` && !`+slaRow(freshCode))
		}

		// The customer asks for help; both consoles list it and say so.
		if err := chromedp.Run(phone, chromedp.Click("#help-ask", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		asked := time.Now()
		listed := func(c string) string {
			return visible("#help-requests") + ` && [...document.querySelectorAll("#help-list li")].some((li) => li.querySelector(".help-code")?.textContent === ` +
				strconv.Quote(c) + `)`
		}
		type sighting struct {
			name string
			took time.Duration
		}
		seen := make(chan sighting, len(consoles))
		for _, c := range consoles {
			go func() {
				if within(c.nav, 10*time.Second, listed(freshCode)) == nil {
					seen <- sighting{c.name, time.Since(asked)}
				} else {
					seen <- sighting{c.name, -1}
				}
			}()
		}
		var took []string
		for range consoles {
			s := <-seen
			if s.took < 0 {
				took = append(took, s.name+" never (10 s)")
			} else {
				took = append(took, s.name+" "+s.took.Round(time.Millisecond).String())
			}
		}
		t.Logf("the customer's press to the request on the consoles: %s", strings.Join(took, ", "))
		for _, c := range consoles {
			waitConsole(t, c.nav, time.Second, "the request on the "+c.name, listed(freshCode)+
				` && `+jsHas("#help-list", "On my way")+` && `+jsHas("#help-list", "Please come to the counter")+
				` && window.qmsCounter.announced === `+strconv.Quote(freshCode+" asks for help"))
		}
		if err := within(phone, 2*time.Second, visible("#help-asked")); err != nil {
			fail(t, phone, "ticket-help-failed.png", "the request noted on the ticket page", err)
		}
		fits(t, laptop, "laptop 1366x768 with a help request")
		if err := chromedp.Run(tablet, chromedp.EmulateViewport(800, 1280)); err != nil {
			t.Fatal(err)
		}
		fits(t, tablet, "tablet 800x1280 with a help request")
		checkContrast(t, laptop, "the console with a help request", "help-code", "reply")
		docsShot(t, laptop, "counter-help-request.png")

		// The laptop answers, by keyboard (the reply button focused, Enter):
		// the request leaves both consoles, the focus goes on to "Call
		// next", and the customer reads the reply.
		reply := `#help-list li button.reply[data-reply="On my way"]`
		if err := chromedp.Run(laptop, chromedp.Focus(reply, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		keys(t, laptop, kb.Enter)
		answered := time.Now()
		for _, c := range consoles {
			waitConsole(t, c.nav, 5*time.Second, "the request answered, on the "+c.name,
				`document.querySelector("#help-requests").hidden && document.querySelectorAll("#help-list li").length === 0`)
		}
		waitConsole(t, laptop, time.Second, "the answer announced, the focus on Call next",
			`window.qmsCounter.announced === `+strconv.Quote("Answered "+freshCode+": On my way")+` && document.activeElement?.id === "btn-next"`)
		if err := within(phone, 5*time.Second, visible("#help-reply")+" && "+shows("#help-reply", "On my way")+" && !"+visible("#help-asked")); err != nil {
			fail(t, phone, "ticket-help-failed.png", "the reply on the ticket page", err)
		}
		t.Logf("the answer to both consoles and the ticket page: %v", time.Since(answered).Round(time.Millisecond))
		screenshot(t, phone, "ticket-help-on-its-way.png")
	})
}
