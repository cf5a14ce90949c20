package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/qms-dev/qms/test/apptest"
)

// TestBoardSettlesForAHeadlessScreenshot takes the board the way anyone
// would from a shell: a plain `chromium --headless --dump-dom` (what
// `--screenshot` sees), no virtual-time budget, no script of ours. The
// page must settle with the real board in it (the queue's name, the call
// and its station), from the server's first paint, not "Connecting…" over
// an empty board; the stream that stays open must not keep it from
// settling.
func TestBoardSettlesForAHeadlessScreenshot(t *testing.T) {
	chromium := chromiumPath(t)
	app := apptest.Memory(t)
	q := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)
	_, code := takeAndCall(t, app, q)

	profile, err := os.MkdirTemp("", "qms-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--window-size=1920,1080", "--dump-dom", tok.URL)
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("chromium --headless --dump-dom of the board did not settle within 60 s")
	}
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	dom := string(out)
	// The page's JSON block holds the strings too: look at the rendered
	// elements only.
	rows := regexp.MustCompile(`(?s)<tbody id="calling-rows">(.*?)</tbody>`).FindStringSubmatch(dom)
	if !strings.Contains(dom, `<h1 id="queue-name">Pickup</h1>`) || rows == nil ||
		!strings.Contains(rows[1], ">"+code+"<") || !strings.Contains(rows[1], q.StationLabel) {
		t.Errorf("the settled board lacks the queue's name, or the call of %s at %s", code, q.StationLabel)
	}
	if conn := regexp.MustCompile(`id="connection"[^>]*>([^<]*)<`).FindStringSubmatch(dom); conn == nil || conn[1] == "Connecting…" {
		t.Errorf("the settled board's connection says %q", conn)
	}
	if t.Failed() {
		t.Logf("the DOM chromium settled on:\n%s", dom)
	}
	t.Logf("chromium --headless --dump-dom settled in %v", time.Since(start).Round(10*time.Millisecond))
}

// TestBoardKeepsStationNamesWholeAndOverlaysOpaque opens a board on a
// phone with a long station name: the station's number stays on the line
// of its last word ("atención 12", never "12" alone); and the revoked
// overlay hides the board behind it completely.
func TestBoardKeepsStationNamesWholeAndOverlaysOpaque(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t)
	q := boardQueue(t, app)
	var st struct{ ID string }
	app.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": "Ventanilla de atención 12"}).Must(http.StatusCreated, &st)
	tok := newDisplayToken(t, app, q.RunID)
	var turn struct{ ID string }
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}).Must(http.StatusCreated, &turn)
	app.API(http.MethodPost, "/turns/"+turn.ID+"/call", map[string]any{"stationId": st.ID}).Must(http.StatusCreated, nil)

	nav, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(nav, chromedp.EmulateViewport(320, 640), chromedp.Navigate(tok.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 10*time.Second, `!!document.querySelector("#calling-rows td.station .nowrap")`); err != nil {
		t.Fatalf("the station's cell has no unbreakable ending: %v", err)
	}
	var keep struct {
		Text       string
		Lines      int
		CellText   string
		LineHeight float64
	}
	if err := chromedp.Run(nav, chromedp.Evaluate(`(() => {
		const span = document.querySelector("#calling-rows td.station .nowrap");
		return { text: span.textContent, lines: span.getClientRects().length, cellText: span.parentNode.innerText };
	})()`, &keep)); err != nil {
		t.Fatal(err)
	}
	if keep.Text != "atención 12" || keep.Lines != 1 || keep.CellText != "Ventanilla de atención 12" {
		t.Errorf("station cell %+v; want \"atención 12\" on one line, the text with its ordinary spaces", keep)
	}

	app.API(http.MethodDelete, "/display-tokens/"+tok.ID, nil).Must(http.StatusOK, nil)
	if err := within(nav, 15*time.Second, `!document.querySelector("#message").hidden`); err != nil {
		t.Fatalf("the revoked overlay did not show: %v", err)
	}
	var bg string
	if err := chromedp.Run(nav, chromedp.Evaluate(`getComputedStyle(document.querySelector("#message")).backgroundColor`, &bg)); err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(bg, "rgba(") {
		t.Errorf("the revoked overlay's background is %s: the board shows through", bg)
	}
}
