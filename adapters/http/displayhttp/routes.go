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
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
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
	// Heartbeat is how often an idle board stream sends a heartbeat and
	// checks that its token still stands: a revoked board stops within
	// it. Default 5 s.
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
		t, err := svc.Create(c.UserContext(), httpx.AccountOf(c), c.Params("runId"), in)
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
		t, err := svc.Update(c.UserContext(), httpx.AccountOf(c), c.Params("tokenId"), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, t)
	})
	r.Delete("/display-tokens/:tokenId", write, func(c *fiber.Ctx) error {
		t, err := svc.Revoke(c.UserContext(), httpx.AccountOf(c), c.Params("tokenId"))
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
// assets, its JSON read and its stream. limit is the rate limit of
// unauthenticated routes (by client address).
func RegisterBoard(app *fiber.App, svc *display.Service, hub *stream.Hub, limit fiber.Handler, log *slog.Logger, opts Options) {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 5 * time.Second
	}
	assets, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	page, err := fs.ReadFile(assets, "board.html")
	if err != nil {
		panic(err)
	}
	// Assets first: /display/assets/board.js must not be taken for a
	// token's board read.
	app.Get(Prefix+"/assets/:file", limit, httpx.Assets(assets))
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
		return pageFor(c, svc, log, page)
	})
	app.Get(Prefix+"/:token/board", limit, func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "no-store")
		t, err := svc.Resolve(c.UserContext(), strings.Clone(c.Params("token")))
		if err != nil {
			return err
		}
		b, err := svc.Board(c.UserContext(), t)
		if err != nil {
			return err
		}
		return httpx.OK(c, b)
	})
	app.Get(Prefix+"/:token/events", limit, func(c *fiber.Ctx) error {
		value := strings.Clone(c.Params("token"))
		ctx := c.UserContext()
		t, err := svc.Resolve(ctx, value)
		if err != nil {
			return err
		}
		// Subscribe before reading the board: a change between the two
		// arrives as an event, never falls in between.
		sub, err := hub.Subscribe(ctx, stream.Request{AccountID: t.AccountID,
			Filter: stream.Filter{Scopes: boardScopes, RunID: t.RunID, Names: boardEvents}})
		if err != nil {
			return err
		}
		b, err := svc.Board(ctx, t)
		if err != nil {
			sub.Close()
			return err
		}
		return streamhttp.Serve(c, sub, streamhttp.SSE{
			Heartbeat: opts.Heartbeat,
			First:     &streamhttp.Frame{Event: "board", Data: boardMessage{Board: b}},
			Message: func(e stream.Entry) (string, any, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				b, err := svc.Board(ctx, t)
				if err != nil {
					log.Warn("display: reading a board failed", "err", err)
					return "", nil, err
				}
				tr := &trigger{Event: e.Event.Name}
				if turns.IsEvent(e.Event.Name) {
					var ref turns.TurnFields
					if err := e.Event.Decode(&ref); err != nil {
						return "", nil, err
					}
					tr.TurnID, tr.DisplayCode = ref.TurnID, ref.DisplayCode
				}
				return "board", boardMessage{Board: b, Trigger: tr}, nil
			},
			Check: func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := svc.Resolve(ctx, value)
				if platform.IsCode(err, display.CodeDisplayTokenRevoked) || platform.IsCode(err, display.CodeInvalidDisplayToken) {
					return &streamhttp.Ended{Event: "revoked", Message: "this display link has been revoked"}
				}
				if err != nil {
					log.Warn("display: checking a token failed; the board goes on", "err", err)
				}
				return nil
			},
		})
	})
}
