// Package displayhttp is the HTTP adapter of the display board: the API
// that makes and revokes display tokens (under /api/v1, with an API key),
// and the board itself, served by the binary under /display/{token}: an
// HTML page with its CSS and JavaScript embedded (no build step), a JSON
// read of the board, and an SSE stream that sends the whole board after
// every change of the run. The /display routes take no API key: the token
// in the path is the capability, and it opens one run's board read-only.
package displayhttp

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/i18nweb"
	"github.com/qms-dev/qms/adapters/http/streamhttp"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
)

//go:embed web
var webFiles embed.FS

// Prefix is where the boards are served.
const Prefix = "/display"

// Options tune the board's stream.
type Options struct {
	// Heartbeat is how often an idle board stream sends a heartbeat; it
	// reads nothing (a revocation reaches the board as an event).
	// Default streamhttp.DefaultHeartbeat (15 s).
	Heartbeat time.Duration
}

const list = "display-tokens"

// created is the token creation response: the token with its value and the
// board's URL, both shown once.
type created struct {
	display.Created
	URL string `json:"url"`
}

// RegisterAPI mounts the token routes on the authenticated /api/v1 router.
func RegisterAPI(r fiber.Router, svc *display.Service, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeQueuesRead), httpx.Require(accounts.ScopeQueuesWrite)

	r.Post("/queue-runs/:runId/display-tokens", write, func(c *fiber.Ctx) error {
		var in display.CreateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		t, err := svc.Create(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("runId")), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, created{Created: t, URL: httpx.PublicBase(c) + Prefix + "/" + t.Value})
	})
	r.Get("/queue-runs/:runId/display-tokens", read, func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, list)
		if err != nil {
			return err
		}
		p, err := svc.List(c.UserContext(), httpx.AccountOf(c), c.Params("runId"), page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, list, p, page.Limit)
	})
	r.Patch("/display-tokens/:tokenId", write, func(c *fiber.Ctx) error {
		var in display.UpdateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		t, err := svc.Update(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("tokenId")), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, t)
	})
	r.Delete("/display-tokens/:tokenId", write, func(c *fiber.Ctx) error {
		t, err := svc.Revoke(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("tokenId")))
		if err != nil {
			return err
		}
		return httpx.OK(c, t)
	})
}

// boardMessage is the data of a "board" event: the whole board, and the
// event that changed it (null for the first one), so the page can tell a
// new call and chime.
type boardMessage struct {
	Board   display.Board `json:"board"`
	Trigger *trigger      `json:"trigger"`
}

type trigger struct {
	Event       string `json:"event"`
	TurnID      string `json:"turnId,omitempty"`
	DisplayCode string `json:"displayCode,omitempty"`
}

// boardEvents are the events that change a board.
var boardEvents = events.OfSubjects("turn", "queue")

// boardScopes let a board's subscription read turn and queue events (of
// its one run only: the filter names it).
var boardScopes = accounts.NewScopeSet([]accounts.Scope{accounts.ScopeTurnsRead, accounts.ScopeQueuesRead})

// RegisterBoard mounts the public board routes on app: the page, its
// assets, its JSON read and its stream. limit is the rate limit of the
// routes a token opens (server.TokenLimit: per token, and per client
// address for the whole waiting room); the assets have none.
func RegisterBoard(app *fiber.App, svc *display.Service, hub *stream.Hub, limit fiber.Handler, log *slog.Logger, opts Options) {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = streamhttp.DefaultHeartbeat
	}
	web, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	page, err := fs.ReadFile(web, "board.html")
	if err != nil {
		panic(err)
	}
	// The page links to its files by versioned addresses, cached for good;
	// they are not rate limited.
	assets := httpx.NewAssets(web, ".", Prefix+"/assets/")
	page = i18nweb.Assets().Versioned(assets.Versioned(page))
	runs := stream.NewRuns(hub, boardScopes, boardEvents,
		func(ctx context.Context, accountID, runID string, _ *runBoard, _ []stream.Entry) (*runBoard, error) {
			b, err := svc.RunBoard(ctx, accountID, runID)
			if err != nil {
				return nil, err
			}
			return &runBoard{board: b}, nil
		}, stream.RunsOptions{Logger: log, Internal: tokenEvents, Changes: changeEvents})
	// A board as it is now: from the view the run's group built when this
	// process follows the run (a board of it is open, or was a moment
	// ago), else read. A screen's page load and its JSON read then cost
	// the token's lookup only.
	boardOf := func(ctx context.Context, t display.Token) (display.Board, error) {
		if v, ok := runs.Latest(t.AccountID, t.RunID); ok {
			return v.board.For(t), nil
		}
		return svc.Board(ctx, t)
	}
	// Assets first: /display/assets/board.js must not be taken for a
	// token's board read.
	app.Get(Prefix+"/assets/:file", assets.Handler())
	app.Get(Prefix+"/:token", limit, func(c *fiber.Ctx) error {
		// The page is the same for every live token: it reads the token
		// from its address and asks the server what to show; a revoked or
		// unknown token gets a page saying so (410, 404). Never cached,
		// never sent on as a referrer (the address is the capability).
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		c.Set(fiber.HeaderCacheControl, "no-store")
		c.Set("Referrer-Policy", "no-referrer")
		c.Set("X-Robots-Tag", "noindex")
		c.Set("X-Content-Type-Options", "nosniff")
		c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'")
		return pageFor(c, svc, boardOf, log, page)
	})
	app.Get(Prefix+"/:token/board", limit, func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "no-store")
		t, err := svc.Resolve(c.UserContext(), strings.Clone(c.Params("token")))
		if err != nil {
			return err
		}
		b, err := boardOf(c.UserContext(), t)
		if err != nil {
			return err
		}
		return httpx.OK(c, b)
	})
	app.Get(Prefix+"/:token/events", limit, func(c *fiber.Ctx) error {
		return serveBoard(c, svc, runs, strings.Clone(c.Params("token")), opts)
	})
}

// runBoard is a run's board after its events, built once for all of the
// run's boards in this process (stream.Runs).
type runBoard struct {
	board display.Board
}

// tokenEvents are the internal events a board's run group follows besides
// the run's: its tokens revoked or changed.
var tokenEvents = []string{platform.EventName[display.TokenChanged]()}

// changeEvents are the internal events that change a board besides the
// run's: a turn's change that raises no spec event (a hold, a start, ...).
var changeEvents = []string{platform.EventName[turns.TurnStateChanged]()}

// tokenChange is what an update says of token t: ok false when it is not
// a change of t (a run's event, or another token's change).
func tokenChange(e *stream.Entry, t display.Token) (ch display.TokenChanged, ok bool) {
	if e == nil || e.Event.Name != tokenEvents[0] {
		return ch, false
	}
	if err := e.Event.Decode(&ch); err != nil || ch.TokenID != t.ID {
		return ch, false
	}
	return ch, true
}

// revokedBefore reports whether the group handed out t's revocation
// before this board joined it (the token was checked before the join).
func revokedBefore(first *stream.Update[*runBoard], t display.Token) bool {
	for i := range first.Internal {
		if ch, ok := tokenChange(&first.Internal[i], t); ok && ch.Revoked {
			return true
		}
	}
	return false
}

// triggerOf is the event that changed a board, as the page is told it:
// none for an internal event, whose name is no client's business.
func triggerOf(e *stream.Entry) *trigger {
	if slices.Contains(changeEvents, e.Event.Name) {
		return nil
	}
	tr := &trigger{Event: e.Event.Name}
	if turns.IsEvent(e.Event.Name) {
		var ref turns.TurnFields
		if err := e.Event.Decode(&ref); err == nil {
			tr.TurnID, tr.DisplayCode = ref.TurnID, ref.DisplayCode
		}
	}
	return tr
}

// serveBoard streams a token's board: the whole board when it connects,
// then again after every change of the run, drawn from the board the
// run's group built once. The token is read once, when the board
// connects: its revocation and its changes reach the board as an event of
// its run (display.TokenChanged) from whichever process made them, so a
// revoked board ends at once and an idle one reads nothing.
func serveBoard(c *fiber.Ctx, svc *display.Service, runs *stream.Runs[*runBoard], value string, opts Options) error {
	ctx := c.UserContext()
	t, err := svc.Resolve(ctx, value)
	if err != nil {
		return err
	}
	m, first, err := runs.Join(ctx, t.AccountID, t.RunID)
	if err != nil {
		return err
	}
	if revokedBefore(first, t) {
		m.Close()
		return platform.NewError(platform.KindGone, display.CodeDisplayTokenRevoked, "this display link has been revoked", nil)
	}
	firstBoard := &boardMessage{Board: first.View.board.For(t)}
	streamhttp.OpenLoop(c, 0, opts.Heartbeat, streamhttp.Loop{
		Bind:    func(wake func()) { m.OnUpdate(wake) },
		Pending: m.Pending,
		Step: func(w *streamhttp.Writer) bool {
			if firstBoard != nil {
				w.Event("", "board", *firstBoard)
				firstBoard = nil
			}
			for {
				u, err := m.TryNext()
				switch {
				case err != nil:
					streamhttp.WriteEnd(w, err, "")
					return true
				case u == nil:
					return false
				}
				if ch, ok := tokenChange(u.Entry, t); ok {
					if ch.Revoked {
						w.Event("", "revoked", map[string]any{"message": "this display link has been revoked"})
						return true
					}
					t.Options = ch.Options
					w.Event("", "board", boardMessage{Board: u.View.board.For(t)})
					continue
				}
				if u.Entry.Event.Name == tokenEvents[0] {
					continue // another token's change
				}
				w.Event(u.Entry.Event.ID, "board", boardMessage{Board: u.View.board.For(t), Trigger: triggerOf(u.Entry)})
			}
		},
		Beat: func(w *streamhttp.Writer) bool {
			w.Comment("heartbeat")
			return false
		},
		Close: m.Close,
	})
	return nil
}
