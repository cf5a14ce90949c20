package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// boardQueue is a queue whose arrival board shows the "plate" answer.
func boardQueue(t *testing.T, app *apptest.App) liveQueue {
	t.Helper()
	return newLiveQueue(t, app, "Pickup", map[string]any{
		"preAttention": map[string]any{"questions": []any{
			map[string]any{"id": "plate", "label": "Car plate"},
			map[string]any{"id": "secret", "label": "Something private"},
		}},
		"arrivalBoard": map[string]any{"columns": []any{map[string]any{"key": "plate", "label": "Plate"}}},
	})
}

func newDisplayToken(t *testing.T, app *apptest.App, runID string) client.DisplayTokenCreated {
	t.Helper()
	var tok client.DisplayTokenCreated
	app.API(http.MethodPost, "/queue-runs/"+runID+"/display-tokens", map[string]any{"label": "Lobby"}).Must(http.StatusCreated, &tok)
	return tok
}

type boardView struct {
	Queue   struct{ ID, Name string }
	Run     struct{ ID, Status string }
	Columns []struct{ Key, Label string }
	Calling []boardTurn
	Recent  []boardTurn
	Waiting struct {
		Count       int
		WaitMinutes *int
		Next        []string
	}
}

type boardTurn struct {
	TurnID, DisplayCode string
	Station             *struct{ ID, Label string }
	Columns             map[string]string
}

func readBoard(t *testing.T, app *apptest.App, token string) (*apptest.Response, boardView) {
	t.Helper()
	r := app.Do(http.MethodGet, "/display/"+token+"/board", nil, nil)
	var b boardView
	if r.Status == http.StatusOK {
		r.Decode(&b)
	}
	return r, b
}

// TestDisplayTokensAndBoard makes, lists and revokes display tokens and
// reads the board they open, on each storage: the called turn with its
// station and its arrival-board answer, the last calls, nothing private.
func TestDisplayTokensAndBoard(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := boardQueue(t, app)
		tok := newDisplayToken(t, app, q.RunID)
		if !regexp.MustCompile(`^qmsd_[a-z2-7]{32}$`).MatchString(tok.Token) || tok.URL != app.BaseURL+"/display/"+tok.Token ||
			tok.QueueRunID != q.RunID || tok.QueueID != q.ID || tok.Label == nil || *tok.Label != "Lobby" {
			t.Fatalf("token %+v", tok)
		}
		var list struct{ Data []map[string]any }
		app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/display-tokens", nil).Must(http.StatusOK, &list)
		if len(list.Data) != 1 || list.Data[0]["id"] != tok.ID || list.Data[0]["token"] != nil {
			t.Fatalf("list %v: want the token without its value", list.Data)
		}

		_, b := readBoard(t, app, tok.Token)
		if b.Queue.Name != "Pickup" || len(b.Calling) != 0 || len(b.Columns) != 1 || b.Columns[0].Label != "Plate" {
			t.Fatalf("empty board %+v", b)
		}

		// Three turns called one after another at the one station; the
		// last is being called, the two before are recent calls.
		var codes []string
		for i, plate := range []string{"AAA-111", "BBB-222", "CCC-333"} {
			var turn struct{ ID, DisplayCode string }
			app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{
				"formResponse": map[string]any{"plate": plate, "secret": "do not show"}, "phone": "+15551234567"}).Must(http.StatusCreated, &turn)
			if i > 0 {
				// Free the station: the previous turn is served.
				prev := b.Calling[0].TurnID
				app.API(http.MethodPost, "/turns/"+prev+"/start", nil).Must(http.StatusCreated, nil)
				app.API(http.MethodPost, "/turns/"+prev+"/complete", nil).Must(http.StatusCreated, nil)
			}
			app.API(http.MethodPost, "/turns/"+turn.ID+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
			codes = append(codes, turn.DisplayCode)
			var r *apptest.Response
			r, b = readBoard(t, app, tok.Token)
			if len(b.Calling) != 1 || b.Calling[0].TurnID != turn.ID || b.Calling[0].Station == nil ||
				b.Calling[0].Station.Label != q.StationLabel || b.Calling[0].Columns["plate"] != plate {
				t.Fatalf("board after call %d: %s", i, r.Body)
			}
			for _, private := range []string{"do not show", "5551234567", "secret"} {
				if strings.Contains(string(r.Body), private) {
					t.Fatalf("the board shows %q: %s", private, r.Body)
				}
			}
		}
		if len(b.Recent) != 2 || b.Recent[0].DisplayCode != codes[1] || b.Recent[1].DisplayCode != codes[0] ||
			b.Recent[0].Station == nil || b.Recent[0].Station.Label != q.StationLabel {
			t.Fatalf("recent calls %+v, want %s then %s at %s", b.Recent, codes[1], codes[0], q.StationLabel)
		}

		var revoked client.DisplayTokenCreated
		app.API(http.MethodDelete, "/display-tokens/"+tok.ID, nil).Must(http.StatusOK, &revoked)
		if revoked.RevokedAt == nil {
			t.Fatal("revokedAt not set")
		}
		app.API(http.MethodDelete, "/display-tokens/"+tok.ID, nil).Must(http.StatusOK, nil) // again: no change
		// Revoked: 410 for the board's data and its page, which says so
		// in words; unknown: 404 likewise (issue 14).
		if r, _ := readBoard(t, app, tok.Token); r.Status != http.StatusGone || r.ErrorCode() != "DISPLAY_TOKEN_REVOKED" {
			t.Fatalf("revoked token: %d %s", r.Status, r.Body)
		}
		refusedPage(t, app, tok.Token, http.StatusGone, "This display link has been revoked")
		for _, bad := range []string{"qmsd_" + strings.Repeat("a", 32), "nonsense"} {
			if r, _ := readBoard(t, app, bad); r.Status != http.StatusNotFound || r.ErrorCode() != "INVALID_DISPLAY_TOKEN" {
				t.Fatalf("unknown token %q: %d %s", bad, r.Status, r.Body)
			}
			refusedPage(t, app, bad, http.StatusNotFound, "This display link is not valid")
		}
		// In the board's languages: ?lang=, else the browser's.
		if r := app.Do(http.MethodGet, "/display/"+tok.Token+"?lang=es", nil, nil); r.Status != http.StatusGone ||
			!strings.Contains(string(r.Body), `<html lang="es">`) || !strings.Contains(string(r.Body), "<h1>Este enlace de pantalla ha sido revocado</h1>") {
			t.Fatalf("revoked page in Spanish: %d %s", r.Status, r.Body)
		}
		if r := app.Do(http.MethodGet, "/display/"+tok.Token, nil, map[string]string{"Accept-Language": "de-DE, fr-CA;q=0.8"}); !strings.Contains(string(r.Body), `<html lang="fr">`) {
			t.Fatalf("revoked page for a French-speaking browser: %s", r.Body)
		}
	})
}

// TestDisplayTokenScopesAndAccounts: making and revoking needs
// queues:write, listing queues:read; another account's run or token is
// 403; the page and its assets are served without a key.
func TestDisplayTokenScopesAndAccounts(t *testing.T) {
	app := apptest.Memory(t)
	q := boardQueue(t, app)
	reader := app.NewKey(app.AccountID, "queues:read")
	if r := app.APIWith(reader, http.MethodPost, "/queue-runs/"+q.RunID+"/display-tokens", nil); r.Status != 403 || r.ErrorCode() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("create with queues:read: %d %s", r.Status, r.Body)
	}
	tok := newDisplayToken(t, app, q.RunID)
	app.APIWith(reader, http.MethodGet, "/queue-runs/"+q.RunID+"/display-tokens", nil).Must(http.StatusOK, nil)
	_, other := app.NewAccount("premium", "all")
	if r := app.APIWith(other, http.MethodPost, "/queue-runs/"+q.RunID+"/display-tokens", nil); r.Status != 403 || r.ErrorCode() != "FORBIDDEN" {
		t.Fatalf("create on another account's run: %d %s", r.Status, r.Body)
	}
	if r := app.APIWith(other, http.MethodDelete, "/display-tokens/"+tok.ID, nil); r.Status != 403 || r.ErrorCode() != "FORBIDDEN" {
		t.Fatalf("revoke another account's token: %d %s", r.Status, r.Body)
	}
	if r := app.API(http.MethodPost, "/queue-runs/run_nope/display-tokens", nil); r.Status != 404 {
		t.Fatalf("unknown run: %d %s", r.Status, r.Body)
	}
	if r := app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/display-tokens", map[string]any{"label": ""}); r.Status != 400 {
		t.Fatalf("empty label: %d %s", r.Status, r.Body)
	}

	page := app.Do(http.MethodGet, "/display/"+tok.Token, nil, nil)
	if page.Status != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
		page.Header.Get("Referrer-Policy") != "no-referrer" || !strings.Contains(string(page.Body), "/display/assets/board.js") {
		t.Fatalf("page: %d %v", page.Status, page.Header)
	}
	for file, ctype := range map[string]string{"board.js": "text/javascript", "board.css": "text/css"} {
		r := app.Do(http.MethodGet, "/display/assets/"+file, nil, nil)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), ctype) || len(r.Body) < 100 {
			t.Fatalf("%s: %d %s", file, r.Status, r.Header.Get("Content-Type"))
		}
	}
	if r := app.Do(http.MethodGet, "/display/assets/board.html", nil, nil); r.Status != 404 {
		t.Fatalf("assets serve only the script and the style sheet: %d", r.Status)
	}
}

// TestDisplayBoardStream: the board's stream opens with the board, sends
// it again after a call with the call as trigger, never sends another run's
// changes, and ends with "revoked" once the token is revoked.
func TestDisplayBoardStream(t *testing.T) {
	app := apptest.Memory(t)
	q := boardQueue(t, app)
	other := boardQueue(t, app)
	tok := newDisplayToken(t, app, q.RunID)
	c := openSSE(t, app.BaseURL+"/display/"+tok.Token+"/events", nil)
	first := c.next(streamWait)
	var msg struct {
		Board   boardView
		Trigger *struct{ Event, TurnID, DisplayCode string }
	}
	if err := json.Unmarshal([]byte(first.Data), &msg); first.Event != "board" || err != nil || msg.Trigger != nil || msg.Board.Queue.ID != q.ID {
		t.Fatalf("first frame %+v", first)
	}
	takeAndCall(t, app, other) // another run: nothing
	id, code := takeAndCall(t, app, q)
	for {
		f := c.next(streamWait)
		if f.Event != "board" || f.ID == "" {
			t.Fatalf("frame %+v", f)
		}
		msg.Trigger = nil
		_ = json.Unmarshal([]byte(f.Data), &msg)
		if msg.Trigger == nil || msg.Board.Queue.ID != q.ID {
			t.Fatalf("board frame %s", f.Data)
		}
		if msg.Trigger.Event == "turn.called" {
			if msg.Trigger.TurnID != id || msg.Trigger.DisplayCode != code || len(msg.Board.Calling) != 1 ||
				msg.Board.Calling[0].Station.Label != q.StationLabel {
				t.Fatalf("call frame %s", f.Data)
			}
			break
		}
	}
	app.API(http.MethodDelete, "/display-tokens/"+tok.ID, nil).Must(http.StatusOK, nil)
	if f := c.next(10 * time.Second); f.Event != "revoked" {
		t.Fatalf("after revoking: %+v", f)
	}
	resp, done := getSSE(t, app.BaseURL+"/display/"+tok.Token+"/events", nil)
	defer done()
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("reconnecting with a revoked token: %d", resp.StatusCode)
	}
	unknown, done2 := getSSE(t, app.BaseURL+"/display/qmsd_"+strings.Repeat("b", 32)+"/events", nil)
	defer done2()
	if unknown.StatusCode != http.StatusNotFound {
		t.Fatalf("the stream of an unknown token: %d", unknown.StatusCode)
	}
}

// refusedPage checks that a board's address answers status with a small
// HTML page that says what is wrong, and never the board's page.
func refusedPage(t *testing.T, app *apptest.App, token string, status int, says string) {
	t.Helper()
	r := app.Do(http.MethodGet, "/display/"+token, nil, nil)
	if r.Status != status || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.Body), "<h1>"+says+"</h1>") || strings.Contains(string(r.Body), "board.js") ||
		r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("page of token %q: %d %v\n%s", token, r.Status, r.Header, r.Body)
	}
}
