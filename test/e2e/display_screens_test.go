package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// boardCheck is what the page reports about itself at one screen size.
type boardCheck struct {
	InnerWidth, InnerHeight int
	ScrollWidth             int
	Wider                   []string // elements reaching past the screen's sides
	Pages, PerPage          int
	Seen                    []string // codes seen on screen over one rotation cycle
	CodePx                  float64  // the called codes' font size
}

const boardCheckJS = `(() => {
	const W = innerWidth, H = innerHeight, out = {innerWidth: W, innerHeight: H,
		scrollWidth: document.documentElement.scrollWidth, wider: [], seen: []};
	for (const e of document.querySelectorAll("body *")) {
		const r = e.getBoundingClientRect();
		if (r.width > 0 && (r.right > W + 1 || r.left < -1)) {
			out.wider.push(e.tagName + (e.id ? "#" + e.id : "") + " " + Math.round(r.left) + ".." + Math.round(r.right));
		}
	}
	const b = window.qmsBoard;
	out.pages = b.pages; out.perPage = b.perPage;
	const seen = new Set();
	for (let p = 0; p < b.pages; p++) {
		for (const tr of document.querySelectorAll("#calling-rows tr")) {
			const r = tr.getBoundingClientRect();
			if (!tr.hidden && r.height > 0 && r.top >= 0 && r.bottom <= H + 1 && r.left >= 0 && r.right <= W + 1) {
				seen.add(tr.querySelector("td.code").innerText);
			}
		}
		b.nextPage();
	}
	out.seen = [...seen];
	const code = document.querySelector("#calling-rows td.code");
	out.codePx = code ? parseFloat(getComputedStyle(code).fontSize) : 0;
	return out;
})()`

// TestDisplayBoardFitsEveryScreen opens the board in headless Chromium on
// a phone, a laptop, a TV and a portrait TV while 1, 10 and 30 counters
// are calling: nothing is wider than the screen, and every called code is
// on screen within one rotation cycle (the board shows the calls a page at
// a time when they do not all fit). Screenshots go to the artifacts.
func TestDisplayBoardFitsEveryScreen(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t)

	var e client.Entity
	app.API(http.MethodPost, "/entities", map[string]any{"name": "Central branch"}).Must(http.StatusCreated, &e)
	stations := []any{}
	for i := 1; i <= 30; i++ {
		stations = append(stations, map[string]any{"label": fmt.Sprintf("Window %d", i)})
	}
	var q client.QueueView
	app.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Pickup", "type": "TURN", "stations": stations,
		"preAttention": map[string]any{"questions": []any{map[string]any{"id": "plate", "label": "Car plate"}}},
		"arrivalBoard": map[string]any{"columns": []any{map[string]any{"key": "plate", "label": "Plate"}}},
	}).Must(http.StatusCreated, &q)
	runID := q.Runs[0].ID
	tok := newDisplayToken(t, app, runID)

	// Two served earlier, so "Recently called" has something.
	called := []string{}
	call := func(i int, keep bool) {
		var turn struct{ ID, DisplayCode string }
		app.API(http.MethodPost, "/queue-runs/"+runID+"/turns", map[string]any{"formResponse": map[string]any{"plate": fmt.Sprintf("QMS-%03d", 100+i)}}).Must(http.StatusCreated, &turn)
		app.API(http.MethodPost, "/turns/"+turn.ID+"/call", map[string]any{"stationId": q.Stations[i%30].ID}).Must(http.StatusCreated, nil)
		if keep {
			called = append(called, turn.DisplayCode)
			return
		}
		for _, op := range []string{"start", "complete"} {
			app.API(http.MethodPost, "/turns/"+turn.ID+"/"+op, map[string]any{}).Must(http.StatusCreated, nil)
		}
	}
	call(0, false)
	call(1, false)

	screens := []struct {
		name string
		w, h int64
	}{{"phone", 390, 844}, {"laptop", 1280, 720}, {"tv", 1920, 1080}, {"portrait-tv", 1080, 1920}, {"small-phone", 360, 640}}
	for _, n := range []int{1, 10, 30} {
		for len(called) < n {
			call(len(called), true)
		}
		for _, s := range screens {
			t.Run(fmt.Sprintf("%d-calling-%s", n, s.name), func(t *testing.T) {
				nav, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				if err := chromedp.Run(nav, chromedp.EmulateViewport(s.w, s.h), chromedp.Navigate(tok.URL)); err != nil {
					t.Fatal(err)
				}
				if err := within(nav, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live" && window.qmsBoard.boards >= 1 && document.querySelectorAll("#calling-rows tr").length === `+fmt.Sprint(n)); err != nil {
					t.Fatalf("the board never showed %d calls: %v", n, err)
				}
				var raw json.RawMessage
				if err := chromedp.Run(nav, chromedp.Evaluate(boardCheckJS, &raw)); err != nil {
					t.Fatal(err)
				}
				var c boardCheck
				if err := json.Unmarshal(raw, &c); err != nil {
					t.Fatal(err)
				}
				var png []byte
				if err := chromedp.Run(nav, chromedp.ActionFunc(func(ctx context.Context) error {
					var err error
					png, err = page.CaptureScreenshot().Do(ctx)
					return err
				})); err != nil {
					t.Fatal(err)
				}
				writeArtifact(t, fmt.Sprintf("display-board-%s-%d.png", s.name, n), png)
				t.Logf("%dx%d: %d calls, %d per page, %d page(s), codes %.0f px", c.InnerWidth, c.InnerHeight, n, c.PerPage, c.Pages, c.CodePx)

				if c.ScrollWidth > c.InnerWidth || len(c.Wider) > 0 {
					t.Errorf("wider than the %d px screen (scrollWidth %d): %s", c.InnerWidth, c.ScrollWidth, strings.Join(c.Wider, "; "))
				}
				sort.Strings(c.Seen)
				want := append([]string(nil), called...)
				sort.Strings(want)
				if strings.Join(c.Seen, ",") != strings.Join(want, ",") {
					t.Errorf("codes on screen within a rotation cycle: %v, want %v", c.Seen, want)
				}
				if min := 24.0; c.CodePx < min {
					t.Errorf("codes are %.0f px, under %.0f px", c.CodePx, min)
				}
			})
		}
	}
}

// TestDisplayBoardSaysHowManyWait opens the board in Chromium: it says how
// many wait and about how long, and a banner says plainly when intake
// closes and when the run closes.
func TestDisplayBoardSaysHowManyWait(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t)
	q := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)
	for i := 0; i < 3; i++ {
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, nil)
	}
	_, b := readBoard(t, app, tok.Token)
	if b.Waiting.Count != 3 || b.Waiting.WaitMinutes == nil {
		t.Fatalf("board waiting %+v, want 3 with a wait", b.Waiting)
	}

	nav, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(nav, chromedp.EmulateViewport(390, 844), chromedp.Navigate(tok.URL+"?next=2")); err != nil {
		t.Fatal(err)
	}
	says := func(sel, want string) {
		t.Helper()
		expr := `(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); return !!e && !e.hidden && e.innerText.includes(` + strconv.Quote(want) + `); })()`
		if err := within(nav, 5*time.Second, expr); err != nil {
			var text string
			_ = chromedp.Run(nav, chromedp.Text("body", &text, chromedp.ByQuery))
			t.Fatalf("%s does not say %q (%v); the page reads:\n%s", sel, want, err, text)
		}
	}
	says("#waiting", "3 waiting")
	// No service timed yet: no figure (not the 300-s default as a "usual
	// wait"), said in words.
	says("#waiting", "wait times show once a few customers have been served")
	var idle struct {
		Idle                   bool
		PleaseWait, Height     float64
		UsualWait, DefaultWait bool
	}
	if err := chromedp.Run(nav, chromedp.Evaluate(`({
		idle: document.body.classList.contains("idle"),
		pleaseWait: parseFloat(getComputedStyle(document.querySelector("#calling-empty")).fontSize),
		height: innerHeight,
		usualWait: document.querySelector("#waiting").innerText.includes("usual wait"),
	})`, &idle)); err != nil {
		t.Fatal(err)
	}
	// The idle board is legible across a room: "please wait" at least a
	// twentieth of the screen's height, not a footnote.
	if !idle.Idle || idle.PleaseWait < 0.05*idle.Height || idle.UsualWait {
		t.Errorf("idle board: %+v; want the idle layout, \"please wait\" at least 5%% of the height, no usual wait", idle)
	}
	if len(b.Waiting.Next) != 3 {
		t.Fatalf("next up %v, want the 3 waiting", b.Waiting.Next)
	}
	says("#waiting", "Next: "+b.Waiting.Next[0]+" "+b.Waiting.Next[1])
	var shown int
	if err := chromedp.Run(nav, chromedp.Evaluate(`document.querySelectorAll("#waiting .next .code").length`, &shown)); err != nil || shown != 2 {
		t.Fatalf("?next=2 shows %d codes (%v)", shown, err)
	}
	_, _ = takeAndCall(t, app, q)
	says("#waiting", "3 waiting") // 4 taken, 1 called
	// Closing intake raises no event, so the board shows it with the next
	// change of the run: here a customer leaves the line.
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/close-intake", nil).Must(http.StatusCreated, nil)
	var next struct{ Data []struct{ ID string } }
	app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/turns?status=WAITING", nil).Must(http.StatusOK, &next)
	if len(next.Data) == 0 {
		t.Fatal("no waiting turn listed")
	}
	app.API(http.MethodPost, "/turns/"+next.Data[0].ID+"/cancel", nil).Must(http.StatusCreated, nil)
	says("#banner", "No new turns are being taken")
	says("#waiting", "2 waiting")
	var png []byte
	if err := chromedp.Run(nav, chromedp.CaptureScreenshot(&png)); err != nil {
		t.Fatal(err)
	}
	writeArtifact(t, "display-board-intake-closed-phone.png", png)
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/close", nil).Must(http.StatusCreated, nil)
	says("#banner", "This queue is closed")
}

// TestDisplayBoardSpeaksEachCall: a call is spoken after the chime, the
// code letter by letter and the station; "?speak=off" keeps a screen quiet.
func TestDisplayBoardSpeaksEachCall(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t)
	q := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)
	nav, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	open := func(url string) {
		t.Helper()
		if err := chromedp.Run(nav, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		if err := within(nav, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live"`); err != nil {
			t.Fatalf("the board never went live: %v", err)
		}
	}
	open(tok.URL)
	id, code := takeAndCall(t, app, q)
	want := strings.Join(strings.Split(code, ""), " ") + ", " + q.StationLabel
	if err := within(nav, 2*time.Second, `window.qmsBoard.spoken.includes(`+strconv.Quote(want)+`)`); err != nil {
		var spoken []string
		_ = chromedp.Run(nav, chromedp.Evaluate(`window.qmsBoard.spoken`, &spoken))
		t.Fatalf("spoken %q, want %q", spoken, want)
	}
	app.API(http.MethodPost, "/turns/"+id+"/start", map[string]any{}).Must(http.StatusCreated, nil)
	app.API(http.MethodPost, "/turns/"+id+"/complete", map[string]any{}).Must(http.StatusCreated, nil)

	open(tok.URL + "?speak=off")
	_, code = takeAndCall(t, app, q)
	if err := within(nav, 2*time.Second, `!!document.querySelector("#calling-rows tr.fresh") && document.querySelector("#calling-rows tr.fresh").innerText.includes(`+strconv.Quote(code)+`)`); err != nil {
		t.Fatalf("call not shown: %v", err)
	}
	var n int
	if err := chromedp.Run(nav, chromedp.Evaluate(`window.qmsBoard.spoken.length`, &n)); err != nil || n != 0 {
		t.Fatalf("a quiet board spoke %d times (%v)", n, err)
	}
}
