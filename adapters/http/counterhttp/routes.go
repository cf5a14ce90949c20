// Package counterhttp is the HTTP adapter of the staff console: the API
// that makes, lists and revokes counter links (under /api/v1, with an API
// key) and reads a turn's presses, and the console itself under
// /counter/{token}: an HTML page with its CSS and JavaScript embedded (no
// build step), a JSON read of the console, an SSE stream that sends it
// again after every change of the run, and the presses of its buttons.
// The /counter routes take no API key: the link in the path is the
// capability, and it does dispatch work on one queue and nothing else.
package counterhttp

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/streamhttp"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
)

//go:embed web
var webFiles embed.FS

// Prefix is where the consoles are served.
const Prefix = "/counter"

// Options tune the console's stream.
type Options struct {
	// Heartbeat is how often an idle console stream sends a comment line,
	// so proxies keep it open and the page knows it is alive. Default 2 s.
	// It reads nothing: every committed change of a turn raises an event
	// (a spec event, else the internal turn_state.changed), and a link's
	// revocation does too (counter.LinkRevoked).
	Heartbeat time.Duration
	// Resync is how long an idle console goes without reading its line
	// before it reads it again, for what changes a console and raises no
	// event (a queue's or a station's settings, the run's intake, a
	// finished turn leaving the reopen window). Default 30 s; the read
	// happens at the first heartbeat past it, and sends the console only
	// when it changed.
	Resync time.Duration
}

const list = "counter-links"

// created is the link creation response: the link with its value and the
// console's URL, both shown once.
type created struct {
	counter.Created
	URL string `json:"url"`
}

// RegisterAPI mounts the link routes on the authenticated /api/v1 router:
// making and revoking a link needs dispatch:write (the link does dispatch
// work), listing needs queues:read, a turn's presses turns:read.
func RegisterAPI(r fiber.Router, svc *counter.Service, cur httpx.Cursors) {
	dispatch := httpx.Require(accounts.ScopeDispatchWrite)
	r.Post("/queues/:queueId/counter-links", dispatch, func(c *fiber.Ctx) error {
		var in counter.CreateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		l, err := svc.Create(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("queueId")), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, created{Created: l, URL: httpx.PublicBase(c) + Prefix + "/" + l.Value})
	})
	r.Get("/queues/:queueId/counter-links", httpx.Require(accounts.ScopeQueuesRead), func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, list+"/"+c.Params("queueId"))
		if err != nil {
			return err
		}
		p, err := svc.List(c.UserContext(), httpx.AccountOf(c), c.Params("queueId"), page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, list+"/"+c.Params("queueId"), p, page.Limit)
	})
	r.Delete("/counter-links/:linkId", dispatch, func(c *fiber.Ctx) error {
		l, err := svc.Revoke(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("linkId")))
		if err != nil {
			return err
		}
		return httpx.OK(c, l)
	})
	r.Get("/turns/:turnId/counter-presses", httpx.Require(accounts.ScopeTurnsRead), func(c *fiber.Ctx) error {
		ps, err := svc.History(c.UserContext(), httpx.AccountOf(c), c.Params("turnId"))
		if err != nil {
			return err
		}
		if ps == nil {
			ps = []counter.Press{}
		}
		return httpx.OK(c, fiber.Map{"data": ps})
	})
}

// message is the data of a "console" event.
type message struct {
	Console counter.Console `json:"console"`
}

// pressed is the answer to a press: what it did, and the console after it,
// so the page shows the change at once.
type pressed struct {
	Result  counter.Result  `json:"result"`
	Console counter.Console `json:"console"`
}

// answered is the answer to a help request's answer: the request, and the
// console after it (the request gone from its list).
type answered struct {
	HelpRequest counter.HelpRequest `json:"helpRequest"`
	Console     counter.Console     `json:"console"`
}

// runEvents are the events that change a console: every turn and queue
// event (core/events' registry).
var runEvents = events.OfSubjects("turn", "queue")

// linkEvents are the internal events a console follows besides the
// queue's: its link revoked, and the turns' changes that raise no spec
// event (turn_state.changed).
var linkEvents = []string{platform.EventName[counter.LinkRevoked](), platform.EventName[turns.TurnStateChanged]()}

// streamScopes let a console's subscription read turn and queue events of
// its queue (the filter names it; what is sent is the console).
var streamScopes = accounts.NewScopeSet([]accounts.Scope{accounts.ScopeTurnsRead, accounts.ScopeQueuesRead})

// securityHeaders are the console's: never cached, never sent on as a
// referrer (the address is the capability), not indexed.
func securityHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("X-Robots-Tag", "noindex")
	c.Set("X-Content-Type-Options", "nosniff")
}

// RegisterPage mounts the console routes on app. limit is the rate limit of
// keyless routes (by client address).
func RegisterPage(app *fiber.App, svc *counter.Service, hub *stream.Hub, limit fiber.Handler, log *slog.Logger, opts Options) {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 2 * time.Second
	}
	if opts.Resync <= 0 {
		opts.Resync = 30 * time.Second
	}
	assets, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	page, err := fs.ReadFile(assets, "counter.html")
	if err != nil {
		panic(err)
	}
	shared := newSharedReads(svc.QueueConsole)
	resolve := func(c *fiber.Ctx) (counter.Link, error) {
		return svc.Resolve(c.UserContext(), strings.Clone(c.Params("token")))
	}
	app.Get(Prefix+"/assets/:file", limit, httpx.Assets(assets))
	app.Get(Prefix+"/:token", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		return pageFor(c, svc, log, page)
	})
	app.Get(Prefix+"/:token/state", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		l, err := resolve(c)
		if err != nil {
			return err
		}
		con, err := svc.Console(c.UserContext(), l)
		if err != nil {
			return err
		}
		return httpx.OK(c, con)
	})
	app.Post(Prefix+"/:token/press", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		l, err := resolve(c)
		if err != nil {
			return err
		}
		var in counter.PressInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		res, err := svc.Press(c.UserContext(), l, in)
		if err != nil {
			return err
		}
		con, err := svc.Console(c.UserContext(), l)
		if err != nil {
			return err
		}
		status := fiber.StatusCreated
		if res.Replayed {
			status = fiber.StatusOK
		}
		return c.Status(status).JSON(pressed{Result: res, Console: con})
	})
	// The clerk answers a customer's help request (docs/counter.md, "Help
	// requests"): the answer and the console after it, as a press.
	app.Post(Prefix+"/:token/help-requests/:helpRequestId/answer", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		l, err := resolve(c)
		if err != nil {
			return err
		}
		var in counter.HelpAnswerInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		h, err := svc.AnswerHelp(c.UserContext(), l, strings.Clone(c.Params("helpRequestId")), in)
		if err != nil {
			return err
		}
		con, err := svc.Console(c.UserContext(), l)
		if err != nil {
			return err
		}
		return c.Status(fiber.StatusCreated).JSON(answered{HelpRequest: h, Console: con})
	})
	app.Get(Prefix+"/:token/turns/:turnId/presses", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		l, err := resolve(c)
		if err != nil {
			return err
		}
		ps, err := svc.PressesFor(c.UserContext(), l, c.Params("turnId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, fiber.Map{"data": ps})
	})
	app.Get(Prefix+"/:token/events", limit, func(c *fiber.Ctx) error {
		value := strings.Clone(c.Params("token"))
		ctx := c.UserContext()
		l, err := svc.Resolve(ctx, value)
		if err != nil {
			return err
		}
		// Subscribe before reading the console: a change between the two
		// arrives as an event, never falls in between. The link's
		// revocation is one of them (counter.LinkRevoked): the stream never
		// reads its link again, so the link is checked once more after
		// subscribing, for a revocation that committed in between.
		sub, err := hub.Subscribe(ctx, stream.Request{AccountID: l.AccountID,
			Filter: stream.Filter{Scopes: streamScopes, QueueID: l.QueueID, Names: runEvents, Internal: linkEvents}})
		if err != nil {
			return err
		}
		if _, err := svc.Resolve(ctx, value); err != nil {
			sub.Close()
			return err
		}
		con, err := svc.Console(ctx, l)
		if err != nil {
			sub.Close()
			return err
		}
		last, readAt := fingerprint(con), time.Now()
		// After an event, the console is drawn from the queue's read
		// that the process's consoles of the queue share (sharedReads);
		// the idle resync reads its own.
		shared.open(l.AccountID, l.QueueID)
		after := func(p stream.Position) (counter.Console, error) {
			readAt = time.Now()
			qc, err := shared.after(context.Background(), l.AccountID, l.QueueID, p)
			return qc.For(l), err
		}
		read := func() (counter.Console, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			readAt = time.Now()
			return svc.Console(ctx, l)
		}
		return streamhttp.Serve(c, sub, streamhttp.SSE{
			Heartbeat: opts.Heartbeat,
			First:     &streamhttp.Frame{Event: "console", Data: message{Console: con}},
			Message: func(e stream.Entry) (string, any, error) {
				if e.Event.Name == linkEvents[0] {
					var r counter.LinkRevoked
					if err := e.Event.Decode(&r); err != nil || r.LinkID != l.ID {
						return "", nil, nil // another link of the queue: nothing changed here
					}
					return "", nil, &streamhttp.Ended{Event: "revoked", Message: "this counter link has been revoked"}
				}
				con, err := after(e.Position)
				if err != nil {
					log.Warn("counter: reading a console failed", "err", err)
					return "", nil, err
				}
				last = fingerprint(con)
				return "console", message{Console: con}, nil
			},
			Done: func() { shared.close(l.AccountID, l.QueueID) },
			Idle: func() (*streamhttp.Frame, error) {
				if time.Since(readAt) < opts.Resync {
					return nil, nil // every change of a turn came as an event
				}
				con, err := read()
				if err != nil {
					log.Warn("counter: re-reading a console failed; the console goes on", "err", err)
					return nil, nil
				}
				if fp := fingerprint(con); fp != last {
					last = fp
					return &streamhttp.Frame{Event: "console", Data: message{Console: con}}, nil
				}
				return nil, nil
			},
		})
	})
}

// fingerprint tells two reads of a console apart, its read time aside.
func fingerprint(c counter.Console) [32]byte {
	c.GeneratedAt = time.Time{}
	b, _ := json.Marshal(c)
	return sha256.Sum256(b)
}
