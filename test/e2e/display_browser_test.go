package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/qms-dev/qms/test/apptest"
)

// chromiumPath finds the browser: $QMS_CHROMIUM, else Debian's chromium
// (apt-get install chromium) or another Chromium or Chrome on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("QMS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on this machine: .ci/run must install it (apt-get install -y chromium)")
	}
	t.Skip("no Chromium on this machine (apt-get install -y chromium, or set QMS_CHROMIUM); the display board's browser test needs one")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a
// context driving one tab of it.
func browser(t *testing.T) context.Context {
	t.Helper()
	// A fresh profile, removed once the browser is gone (t.TempDir would
	// race with Chromium's last writes to it).
	profile, err := os.MkdirTemp("", "qms-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 800),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx) // closes the browser and waits for it
		cancelTab()
		cancelAlloc()
		for i := 0; i < 20 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	// Start the browser now. The first Run must get the tab's own context:
	// the browser lives as long as the context it was started with.
	started := make(chan error, 1)
	go func() { started <- chromedp.Run(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start Chromium: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Chromium did not start within 60 s")
	}
	return ctx
}

// newWindow opens a tab in a browser window of its own, for a second
// screen beside the first (the board on a TV beside a phone). A second tab
// in the same window would hide the first: Chromium does not draw a hidden
// tab, so a screenshot of it waits up to a minute for a frame, and it
// throttles the tab's timers.
func newWindow(t *testing.T, ctx context.Context) (context.Context, context.CancelFunc) {
	t.Helper()
	var id target.ID
	if err := chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		id, err = target.CreateTarget("about:blank").WithNewWindow(true).Do(cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser))
		return err
	})); err != nil {
		t.Fatalf("open a window: %v", err)
	}
	return chromedp.NewContext(ctx, chromedp.WithTargetID(id))
}

// artifactsDir is where the browser test keeps its screenshots:
// $QMS_ARTIFACTS_DIR, else test/e2e/testdata/artifacts (ignored by git).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("QMS_ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	writeArtifact(t, name, png)
}

// writeArtifact keeps a screenshot among the test's artifacts.
func writeArtifact(t *testing.T, name string, png []byte) {
	t.Helper()
	path := filepath.Join(artifactsDir(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// within waits until the JavaScript expression is true, at most d.
//
// chromedp polls in the page's execution context as it last heard of it;
// just after a navigation, on a busy machine, that can still be the old
// page's, and Chromium answers "Cannot find context with specified id" (or
// the context is destroyed under the poll). That is no answer about the
// page, so the poll starts again in the new context, within the same d.
func within(ctx context.Context, d time.Duration, expr string) error {
	deadline := time.Now().Add(d)
	var err error
	for left := d; left > 0; left = time.Until(deadline) {
		err = chromedp.Run(ctx, chromedp.Poll(expr, nil, chromedp.WithPollingTimeout(left), chromedp.WithPollingInterval(25*time.Millisecond)))
		if err == nil || !staleContext(err) {
			return err
		}
		time.Sleep(25 * time.Millisecond)
	}
	return err
}

func staleContext(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed") // a page that navigated itself (the join page to its ticket)
}

// TestDisplayBoardInChromium opens the board in a real headless Chromium,
// calls a turn through the API, and sees its display code and station on
// the page within 2 seconds, highlighted; a revoked token's board, open or
// opened afresh, says clearly that the link was revoked.
func TestDisplayBoardInChromium(t *testing.T) {
	ctx := browser(t)
	app := apptest.Memory(t)
	q := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)

	nav, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(nav, chromedp.Navigate(tok.URL)); err != nil {
		t.Fatalf("open %s: %v", tok.URL, err)
	}
	if err := within(nav, 10*time.Second, `window.qmsBoard && window.qmsBoard.state === "live" && window.qmsBoard.boards >= 1`); err != nil {
		t.Fatalf("the board never went live: %v", err)
	}

	// Two turns served before, so the board has recent calls.
	for _, plate := range []string{"KLM-301", "XYZ-552"} {
		var earlier struct{ ID string }
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{"formResponse": map[string]any{"plate": plate}}).Must(http.StatusCreated, &earlier)
		for _, op := range []string{"call", "start", "complete"} {
			body := map[string]any{}
			if op == "call" {
				body["stationId"] = q.StationID
			}
			app.API(http.MethodPost, "/turns/"+earlier.ID+"/"+op, body).Must(http.StatusCreated, nil)
		}
	}
	var turn struct{ ID, DisplayCode string }
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{"formResponse": map[string]any{"plate": "QMS-007"}}).Must(http.StatusCreated, &turn)
	called := time.Now()
	app.API(http.MethodPost, "/turns/"+turn.ID+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
	shown := `(() => {
		const row = document.querySelector('#calling-rows tr[data-turn-id="` + turn.ID + `"]');
		return !!row && row.innerText.includes(` + strconv.Quote(turn.DisplayCode) + `) && row.innerText.includes(` + strconv.Quote(q.StationLabel) + `);
	})()`
	if err := within(nav, 2*time.Second, shown); err != nil {
		var text string
		_ = chromedp.Run(nav, chromedp.Text("body", &text, chromedp.ByQuery))
		screenshot(t, ctx, "display-board-failed.png")
		t.Fatalf("turn %s at %s not on the page within 2 s (%v); the page reads:\n%s", turn.DisplayCode, q.StationLabel, err, text)
	}
	t.Logf("the call reached the page in %v", time.Since(called).Round(time.Millisecond))
	var highlighted, plate bool
	if err := chromedp.Run(nav,
		chromedp.Evaluate(`document.querySelector('#calling-rows tr.fresh')?.dataset.turnId === "`+turn.ID+`"`, &highlighted),
		chromedp.Evaluate(`document.querySelector('#calling').innerText.includes("QMS-007") && document.querySelector('#calling').innerText.includes("Plate")`, &plate),
	); err != nil {
		t.Fatal(err)
	}
	if !highlighted || !plate {
		t.Fatalf("highlighted %v, arrival-board column shown %v", highlighted, plate)
	}
	screenshot(t, ctx, "display-board.png")

	// Revoked while open: the page says so at once (the revocation
	// reaches the board's stream as an event; nothing polls the token,
	// whose stream's heartbeat is 15 s).
	app.API(http.MethodDelete, "/display-tokens/"+tok.ID, nil).Must(http.StatusOK, nil)
	revoked := `(() => { const m = document.querySelector('#message');
		return !m.hidden && m.innerText.includes("This display link has been revoked"); })()`
	if err := within(nav, 2*time.Second, revoked); err != nil {
		t.Fatalf("the open board did not say it was revoked: %v", err)
	}
	// Opened afresh: the server's 410 page says it at once, no script
	// needed.
	if err := chromedp.Run(nav, chromedp.Navigate(tok.URL)); err != nil {
		t.Fatal(err)
	}
	if err := within(nav, 5*time.Second, `document.querySelector('h1')?.innerText === "This display link has been revoked" && !window.qmsBoard`); err != nil {
		t.Fatalf("a revoked link does not say so: %v", err)
	}
	screenshot(t, ctx, "display-board-revoked.png")
}
