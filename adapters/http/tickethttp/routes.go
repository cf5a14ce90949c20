// Package tickethttp is the HTTP adapter of the customer's live ticket
// page: the API that makes a turn's ticket link (under /api/v1, with an
// API key), and the page itself under /ticket/{token}: HTML, CSS and
// JavaScript embedded in the binary (no build step), a JSON read of the
// ticket, an SSE stream that sends it again after every change of the run,
// the customer's "leave the queue", and a QR code of the link. The
// /ticket routes take no API key: the link is the capability, and it opens
// one turn and nothing else.
package tickethttp

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	qrcode "github.com/skip2/go-qrcode"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/streamhttp"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/ticket"
)

//go:embed web
var webFiles embed.FS

// Prefix is where the ticket pages are served.
const Prefix = "/ticket"

// Options tune the ticket stream.
type Options struct {
	// Heartbeat is how often an idle stream sends a heartbeat and checks
	// that its link still stands. Default 5 s.
	Heartbeat time.Duration
}

// created is the link creation response: the link with its value, the
// page's URL and the URL of its QR code, shown once.
type created struct {
	ticket.Created
	URL   string `json:"url"`
	QRURL string `json:"qrUrl"`
}

// pageURL is the page's address for a link value.
func pageURL(c *fiber.Ctx, value string) string { return httpx.PublicBase(c) + Prefix + "/" + value }

// RegisterAPI mounts the link route and the staff side of help on the
// authenticated /api/v1 router. Making a link needs turns:write: the link
// can cancel the turn. Reading help requests needs turns:read, answering
// one turns:write.
func RegisterAPI(r fiber.Router, svc *ticket.Service, cur httpx.Cursors) {
	registerHelpAPI(r, svc, cur)
	r.Post("/turns/:turnId/ticket-links", httpx.Require(accounts.ScopeTurnsWrite), func(c *fiber.Ctx) error {
		var in ticket.CreateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		l, err := svc.Create(c.UserContext(), httpx.AccountOf(c), c.Params("turnId"), in)
		if err != nil {
			return err
		}
		u := pageURL(c, l.Value)
		return httpx.Created(c, created{Created: l, URL: u, QRURL: u + "/qr.svg"})
	})
}

// message is the data of a "ticket" event.
type message struct {
	Ticket ticket.Ticket `json:"ticket"`
}

// runEvents are the events that can change a turn's ticket: its own
// changes, and the others' that move the line.
var runEvents = events.OfSubjects("turn", "queue")

// streamScopes let a ticket's subscription read turn and queue events (of
// its one run only: the filter names it; what is sent is the ticket, never
// the events themselves).
var streamScopes = accounts.NewScopeSet([]accounts.Scope{accounts.ScopeTurnsRead, accounts.ScopeQueuesRead})

// securityHeaders are the page's: never cached, never sent on as a
// referrer (the address is the capability), not indexed, nothing from
// elsewhere.
func securityHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("X-Robots-Tag", "noindex")
	c.Set("X-Content-Type-Options", "nosniff")
}

// RegisterPage mounts the public ticket routes on app. limit is the rate
// limit of the display boards (by client address): a ticket page is a
// waiting-room screen too, and rides their budget.
func RegisterPage(app *fiber.App, svc *ticket.Service, hub *stream.Hub, limit fiber.Handler, log *slog.Logger, opts Options) {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 5 * time.Second
	}
	assets, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	page, err := fs.ReadFile(assets, "ticket.html")
	if err != nil {
		panic(err)
	}
	// Assets first: /ticket/assets/ticket.js is not a link.
	app.Get(Prefix+"/assets/:file", limit, httpx.Assets(assets))
	app.Get(Prefix+"/:token", limit, func(c *fiber.Ctx) error {
		// The same page for every link: it reads the link from its
		// address and asks the server what to show. An unknown or expired
		// link answers 404, as its reads do (docs/live.md), so browsers,
		// crawlers and link checkers see a dead link; the page still says
		// what happened in words (its script reads why, in the link's
		// language). When the link cannot be checked (storage away) the
		// page is served as 200 and finds out by itself.
		securityHeaders(c)
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		if _, _, err := svc.Resolve(c.UserContext(), strings.Clone(c.Params("token"))); err != nil {
			if platform.IsCode(err, ticket.CodeTicketLinkExpired) || platform.IsCode(err, ticket.CodeInvalidTicketLink) {
				c.Status(fiber.StatusNotFound)
			} else {
				log.Warn("ticket: checking a ticket link failed; serving the page", "err", err)
			}
		}
		return c.Send(page)
	})
	app.Get(Prefix+"/:token/state", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		_, tk, err := svc.Read(c.UserContext(), strings.Clone(c.Params("token")))
		if err != nil {
			return err
		}
		return httpx.OK(c, tk)
	})
	app.Post(Prefix+"/:token/help", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		tk, err := svc.AskHelp(c.UserContext(), strings.Clone(c.Params("token")))
		if err != nil {
			return err
		}
		return httpx.OK(c, tk)
	})
	app.Post(Prefix+"/:token/leave", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		tk, err := svc.Leave(c.UserContext(), strings.Clone(c.Params("token")))
		if err != nil {
			return err
		}
		return httpx.OK(c, tk)
	})
	qr := func(c *fiber.Ctx) (*qrcode.QRCode, error) {
		value := strings.Clone(c.Params("token"))
		if _, _, err := svc.Resolve(c.UserContext(), value); err != nil {
			return nil, err
		}
		q, err := qrcode.New(pageURL(c, value), qrcode.Medium)
		if err != nil {
			return nil, fmt.Errorf("ticket: making a QR code: %w", err)
		}
		return q, nil
	}
	app.Get(Prefix+"/:token/qr.svg", limit, func(c *fiber.Ctx) error {
		q, err := qr(c)
		if err != nil {
			return err
		}
		securityHeaders(c)
		c.Set(fiber.HeaderContentType, "image/svg+xml")
		return c.SendString(svgOf(q.Bitmap()))
	})
	app.Get(Prefix+"/:token/qr.png", limit, func(c *fiber.Ctx) error {
		q, err := qr(c)
		if err != nil {
			return err
		}
		b, err := q.PNG(-6) // 6 px a module: about 200 px for a link, sharp when printed
		if err != nil {
			return fmt.Errorf("ticket: drawing a QR code: %w", err)
		}
		securityHeaders(c)
		c.Set(fiber.HeaderContentType, "image/png")
		return c.Send(b)
	})
	app.Get(Prefix+"/:token/events", limit, func(c *fiber.Ctx) error {
		value := strings.Clone(c.Params("token"))
		ctx := c.UserContext()
		l, t, err := svc.Resolve(ctx, value)
		if err != nil {
			return err
		}
		// Subscribe before reading the ticket: a change between the two
		// arrives as an event, never falls in between.
		sub, err := hub.Subscribe(ctx, stream.Request{AccountID: l.AccountID,
			Filter: stream.Filter{Scopes: streamScopes, RunID: l.RunID, Names: runEvents}})
		if err != nil {
			return err
		}
		tk, err := svc.Ticket(ctx, l, t)
		if err != nil {
			sub.Close()
			return err
		}
		ended := func(err error) error {
			if platform.IsCode(err, ticket.CodeTicketLinkExpired) || platform.IsCode(err, ticket.CodeInvalidTicketLink) {
				return &streamhttp.Ended{Event: "expired", Message: "this ticket has ended and its link has expired"}
			}
			return nil
		}
		return streamhttp.Serve(c, sub, streamhttp.SSE{
			Heartbeat: opts.Heartbeat,
			First:     &streamhttp.Frame{Event: "ticket", Data: message{Ticket: tk}},
			Message: func(stream.Entry) (string, any, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, tk, err := svc.Read(ctx, value)
				if e := ended(err); e != nil {
					return "", nil, e
				}
				if err != nil {
					log.Warn("ticket: reading a ticket failed", "err", err)
					return "", nil, err
				}
				return "ticket", message{Ticket: tk}, nil
			},
			Check: func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, _, err := svc.Resolve(ctx, value)
				if e := ended(err); e != nil {
					return e
				}
				if err != nil {
					log.Warn("ticket: checking a link failed; the stream goes on", "err", err)
				}
				return nil
			},
		})
	})
}

// svgOf draws a QR bitmap (its quiet zone included) as SVG: one path of
// unit squares, scaled by the viewer, so it prints sharp at any size.
func svgOf(bits [][]bool) string {
	n := len(bits)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges" role="img" aria-label="QR code">`, n, n)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bits {
		for x, on := range row {
			if on {
				fmt.Fprintf(&b, "M%d %dh1v1h-1z", x, y)
			}
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String()
}

// QRCodeSVG draws a QR bitmap as the ticket page's QR codes are drawn
// (the join page's poster and kiosk use it too).
func QRCodeSVG(bits [][]bool) string { return svgOf(bits) }
