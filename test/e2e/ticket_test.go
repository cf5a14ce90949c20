package e2e

import (
	"bytes"
	"encoding/json"
	"image/png"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
)

func newTicketLink(t *testing.T, app *apptest.App, turnID string, body any) client.TicketLinkCreated {
	t.Helper()
	var l client.TicketLinkCreated
	app.API(http.MethodPost, "/turns/"+turnID+"/ticket-links", body).Must(http.StatusCreated, &l)
	return l
}

func readTicket(t *testing.T, app *apptest.App, token string) (*apptest.Response, client.Ticket) {
	t.Helper()
	r := app.Do(http.MethodGet, "/ticket/"+token+"/state", nil, nil)
	var v client.Ticket
	if r.Status == http.StatusOK {
		r.Decode(&v)
	}
	return r, v
}

func takeTicketTurn(t *testing.T, app *apptest.App, runID string, body map[string]any) (id, code string) {
	t.Helper()
	var turn struct{ ID, DisplayCode string }
	app.API(http.MethodPost, "/queue-runs/"+runID+"/turns", body).Must(http.StatusCreated, &turn)
	return turn.ID, turn.DisplayCode
}

// TestTicketLinks makes a ticket link through the API and follows the
// turn on its page's JSON read, on each storage: the link opens that turn
// only (its code, queue, branch, place in the line, where to go when
// called), never the phone or answers; another account's turn is 403, an
// unknown one 404; only the hash is stored; a QR code of the link is served
// as SVG and PNG.
func TestTicketLinks(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := boardQueue(t, app)
		first, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
		mine, code := takeTicketTurn(t, app, q.RunID, map[string]any{"phone": "+5511999990000",
			"formResponse": map[string]any{"plate": "ABC-1234", "secret": "do not show"}})

		l := newTicketLink(t, app, mine, map[string]any{"language": "pt"})
		if !strings.HasPrefix(l.Token, "qmst_") || l.URL != app.BaseURL+"/ticket/"+l.Token || l.QrURL != l.URL+"/qr.svg" ||
			l.TurnID != mine || l.ExpiresAt != nil || l.Language == nil || *l.Language != "pt" {
			t.Fatalf("link %+v", l)
		}

		r, v := readTicket(t, app, l.Token)
		if r.Status != http.StatusOK || v.DisplayCode != code || v.Status != "WAITING" || v.Queue.Name != "Pickup" ||
			v.Branch.Name != "Branch Pickup" || v.Ahead == nil || *v.Ahead != 1 || v.WaitMinutes == nil || !v.CanLeave || !v.RunOpen {
			t.Fatalf("ticket %d %s", r.Status, r.Body)
		}
		// Only this turn, and nothing private: the exact set of members.
		var raw map[string]any
		r.Decode(&raw)
		var keys []string
		for k := range raw {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := "ahead branch calledAt canLeave displayCode expiresAt finishedAt help language queue runOpen securityCode station status waitMinutes waitRange"
		if strings.Join(keys, " ") != want {
			t.Fatalf("ticket members %v, want %s", keys, want)
		}
		for _, leak := range []string{"+5511999990000", "ABC-1234", "do not show", mine, first, q.ID, q.RunID, "acc_", "turn_", "run_", "que_"} {
			if bytes.Contains(r.Body, []byte(leak)) {
				t.Fatalf("the ticket reveals %q: %s", leak, r.Body)
			}
		}

		// The line moves: the first is called, this one is next; then it is
		// called, to Window 2.
		app.API(http.MethodPost, "/turns/"+first+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
		if _, v = readTicket(t, app, l.Token); v.Ahead == nil || *v.Ahead != 0 {
			t.Fatalf("after the first was called: %+v", v)
		}
		app.API(http.MethodPost, "/turns/"+first+"/cancel", nil).Must(http.StatusCreated, nil)
		app.API(http.MethodPost, "/turns/"+mine+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
		if _, v = readTicket(t, app, l.Token); v.Status != "CALLED" || v.Station == nil || *v.Station != "Window 2" || v.Ahead != nil {
			t.Fatalf("called: %+v", v)
		}

		// Another account: 403 for its key on this turn, and its own turn's
		// link opens only its own.
		_, otherKey := app.NewAccount("premium", "all")
		if r := app.APIWith(otherKey, http.MethodPost, "/turns/"+mine+"/ticket-links", nil); r.Status != http.StatusForbidden {
			t.Fatalf("another account's turn: %d %s", r.Status, r.Body)
		}
		wantError(t, app.API(http.MethodPost, "/turns/turn_01J00000000000000000000000/ticket-links", nil), http.StatusNotFound, "NOT_FOUND")
		wantError(t, app.API(http.MethodPost, "/turns/"+mine+"/ticket-links", map[string]any{"language": "de"}), http.StatusBadRequest, "VALIDATION_ERROR")
		readOnly := app.NewKey(app.AccountID, "turns:read")
		if r := app.APIWith(readOnly, http.MethodPost, "/turns/"+mine+"/ticket-links", nil); r.Status != http.StatusForbidden {
			t.Fatalf("turns:read only: %d %s", r.Status, r.Body)
		}

		// Unknown and malformed links: 404 INVALID_TICKET_LINK; the value is
		// not the stored key (its hash is).
		for _, bad := range []string{"qmst_" + strings.Repeat("a", 32), "nonsense", strings.Replace(l.Token, "qmst_", "qmsd_", 1)} {
			r, _ := readTicket(t, app, bad)
			if r.Status != http.StatusNotFound || r.ErrorCode() != "INVALID_TICKET_LINK" {
				t.Fatalf("link %q: %d %s", bad, r.Status, r.Body)
			}
		}

		// The QR code of the link, as SVG and PNG.
		svg := app.Do(http.MethodGet, "/ticket/"+l.Token+"/qr.svg", nil, nil)
		if svg.Status != http.StatusOK || svg.Header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(svg.Body, []byte("<svg")) {
			t.Fatalf("qr.svg: %d %s", svg.Status, svg.Header.Get("Content-Type"))
		}
		pr := app.Do(http.MethodGet, "/ticket/"+l.Token+"/qr.png", nil, nil)
		img, err := png.Decode(bytes.NewReader(pr.Body))
		if pr.Status != http.StatusOK || err != nil || img.Bounds().Dx() < 150 {
			t.Fatalf("qr.png: %d %v", pr.Status, err)
		}
		if r := app.Do(http.MethodGet, "/ticket/qmst_"+strings.Repeat("b", 32)+"/qr.svg", nil, nil); r.Status != http.StatusNotFound {
			t.Fatalf("qr of an unknown link: %d", r.Status)
		}

		// The page itself: keyless, never cached, nothing from elsewhere.
		page := app.Do(http.MethodGet, "/ticket/"+l.Token, nil, nil)
		if page.Status != http.StatusOK || page.Header.Get("Cache-Control") != "no-store" ||
			page.Header.Get("Referrer-Policy") != "no-referrer" || !strings.Contains(page.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Fatalf("page: %d %v", page.Status, page.Header)
		}
	})
}

// TestTicketLeaveAndExpiry: "leave the queue" on the page cancels the turn
// through the same rules as any cancel (turn.cancelled with reason
// "customer", delivered to a webhook; a second leave is 409), and the link
// shows the final state until tickets.expire_after has passed since, then
// answers 404 TICKET_LINK_EXPIRED, and no new link is made for the turn.
func TestTicketLeaveAndExpiry(t *testing.T) {
	clock := platformtest.NewClock(time.Now().UTC())
	app := apptest.Memory(t, apptest.WithClock(clock), apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 100000
		c.Tickets.ExpireAfter = 30 * time.Minute
	}))
	rc := newWhReceiver(t, whStatic(http.StatusOK))
	whEndpoint(t, app, rc.URL(), "turn.cancelled")
	q := boardQueue(t, app)
	id, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	l := newTicketLink(t, app, id, nil)

	r := app.Do(http.MethodPost, "/ticket/"+l.Token+"/leave", nil, nil)
	var v client.Ticket
	r.Must(http.StatusOK, &v)
	if v.Status != "CANCELLED" || v.CanLeave || v.ExpiresAt == nil {
		t.Fatalf("after leaving: %s", r.Body)
	}
	if got := app.API(http.MethodGet, "/turns/"+id, nil).JSON()["status"]; got != "CANCELLED" {
		t.Fatalf("the turn is %v", got)
	}
	hits := rc.wait(t, 1, 10*time.Second)
	var body whBody
	if err := json.Unmarshal(hits[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var data struct{ TurnID, Reason string }
	_ = json.Unmarshal(body.Data, &data)
	if body.Event != "turn.cancelled" || data.TurnID != id || data.Reason != "customer" {
		t.Fatalf("webhook %s", hits[0].Body)
	}
	wantError(t, app.Do(http.MethodPost, "/ticket/"+l.Token+"/leave", nil, nil), http.StatusConflict, "INVALID_TRANSITION")

	// The final state stays readable for a while, then the link expires.
	clock.Advance(29 * time.Minute)
	if r, v := readTicket(t, app, l.Token); r.Status != http.StatusOK || v.Status != "CANCELLED" {
		t.Fatalf("29 min after: %d %s", r.Status, r.Body)
	}
	clock.Advance(2 * time.Minute)
	if r, _ := readTicket(t, app, l.Token); r.Status != http.StatusNotFound || r.ErrorCode() != "TICKET_LINK_EXPIRED" {
		t.Fatalf("31 min after: %d %s", r.Status, r.Body)
	}
	wantError(t, app.Do(http.MethodPost, "/ticket/"+l.Token+"/leave", nil, nil), http.StatusNotFound, "TICKET_LINK_EXPIRED")
	wantError(t, app.API(http.MethodPost, "/turns/"+id+"/ticket-links", nil), http.StatusConflict, "TICKET_LINK_EXPIRED")
}

// TestDisplayTokenOptions: next-up, speech and language are set when a
// token is made and changed with PATCH; the board carries them.
func TestDisplayTokenOptions(t *testing.T) {
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	q := boardQueue(t, app)
	var tok struct {
		ID, Token string
		NextUp    int
		Speech    bool
		Language  *string
	}
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/display-tokens", map[string]any{}).Must(http.StatusCreated, &tok)
	if tok.NextUp != 0 || !tok.Speech || tok.Language != nil {
		t.Fatalf("defaults: %+v", tok)
	}
	app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/display-tokens", map[string]any{"nextUp": 3, "speech": false, "language": "fr"}).
		Must(http.StatusCreated, &tok)
	if tok.NextUp != 3 || tok.Speech || tok.Language == nil || *tok.Language != "fr" {
		t.Fatalf("made with options: %+v", tok)
	}
	board := func() map[string]any {
		return app.Do(http.MethodGet, "/display/"+tok.Token+"/board", nil, nil).Must(http.StatusOK, nil).JSON()["options"].(map[string]any)
	}
	if o := board(); o["nextUp"] != 3.0 || o["speech"] != false || o["language"] != "fr" {
		t.Fatalf("board options %v", o)
	}
	app.API(http.MethodPatch, "/display-tokens/"+tok.ID, map[string]any{"language": nil, "speech": true}).Must(http.StatusOK, nil)
	if o := board(); o["nextUp"] != 3.0 || o["speech"] != true || o["language"] != nil {
		t.Fatalf("board options after PATCH %v", o)
	}
	wantError(t, app.API(http.MethodPatch, "/display-tokens/"+tok.ID, map[string]any{"nextUp": 9}), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, app.API(http.MethodPatch, "/display-tokens/"+tok.ID, map[string]any{"language": "xx"}), http.StatusBadRequest, "VALIDATION_ERROR")
	_, otherKey := app.NewAccount("premium", "all")
	if r := app.APIWith(otherKey, http.MethodPatch, "/display-tokens/"+tok.ID, map[string]any{"speech": false}); r.Status != http.StatusForbidden {
		t.Fatalf("another account: %d %s", r.Status, r.Body)
	}
}

// TestTicketPageOfADeadLinkIs404: the page of an unknown link and of an
// expired one answers 404 (as their reads do, docs/live.md), still an HTML
// page with the page's headers, which says in words what happened (its
// script; TestTicketPageInChromium reads the words). It answered 200 before
// issue 23, so link checkers and crawlers saw a live page.
func TestTicketPageOfADeadLinkIs404(t *testing.T) {
	clock := platformtest.NewClock(time.Now().UTC())
	app := apptest.Memory(t, apptest.WithClock(clock), apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 100000
		c.Tickets.ExpireAfter = 30 * time.Minute
	}))
	q := boardQueue(t, app)
	id, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	l := newTicketLink(t, app, id, nil)
	page := func(token string, want int) {
		t.Helper()
		r := app.Do(http.MethodGet, "/ticket/"+token, nil, nil)
		if r.Status != want || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || !bytes.Contains(r.Body, []byte("<html")) ||
			r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-Robots-Tag") != "noindex" {
			t.Fatalf("page of %s: want %d html, got %d %v", token, want, r.Status, r.Header)
		}
	}
	page(l.Token, http.StatusOK)
	page("qmst_"+strings.Repeat("a", 32), http.StatusNotFound)
	page("nonsense", http.StatusNotFound)
	app.Do(http.MethodPost, "/ticket/"+l.Token+"/leave", nil, nil).Must(http.StatusOK, nil)
	page(l.Token, http.StatusOK) // the final state, for a while
	clock.Advance(31 * time.Minute)
	page(l.Token, http.StatusNotFound)
}
