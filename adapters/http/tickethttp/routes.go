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
	"github.com/qms-dev/qms/adapters/http/i18nweb"
	"github.com/qms-dev/qms/adapters/http/streamhttp"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
)

//go:embed web
var webFiles embed.FS

// Prefix is where the ticket pages are served.
const Prefix = "/ticket"

// Options tune the ticket stream.
type Options struct {
	// Heartbeat is how often an idle stream sends a heartbeat (and checks
	// whether its link has expired, without a read). Default
	// streamhttp.DefaultHeartbeat (15 s).
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
		l, err := svc.Create(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("turnId")), in)
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

// changeEvents are the internal events that change a ticket too: a turn's
// change that raises no spec event (a hold, a start, ...).
var changeEvents = []string{platform.EventName[turns.TurnStateChanged]()}

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
// limit of the routes a link opens (server.TokenLimit: per link, and per
// client address for the whole waiting room).
func RegisterPage(app *fiber.App, svc *ticket.Service, hub *stream.Hub, limit fiber.Handler, log *slog.Logger, opts Options) {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = streamhttp.DefaultHeartbeat
	}
	web, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	page, err := fs.ReadFile(web, "ticket.html")
	if err != nil {
		panic(err)
	}
	// The page links to its files by versioned addresses, cached for good;
	// they are not rate limited (every phone of a waiting room loads them).
	assets := httpx.NewAssets(web, ".", Prefix+"/assets/")
	page = i18nweb.Assets().Versioned(assets.Versioned(page))
	// Assets first: /ticket/assets/ticket.js is not a link.
	app.Get(Prefix+"/assets/:file", assets.Handler())
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
	runs := stream.NewRuns(hub, streamScopes, runEvents,
		func(ctx context.Context, accountID, runID string, prev *ticket.RunView, es []stream.Entry) (*ticket.RunView, error) {
			var turnIDs []string
			for _, e := range es {
				if turns.NamesTurn(e.Event.Name) {
					var ref turns.TurnFields
					if err := e.Event.Decode(&ref); err != nil {
						return nil, fmt.Errorf("ticket: reading event %s: %w", e.Event.ID, err)
					}
					turnIDs = append(turnIDs, ref.TurnID)
				}
			}
			return svc.BuildRun(ctx, accountID, runID, prev, turnIDs)
		}, stream.RunsOptions{Logger: log, Changes: changeEvents})
	links := newLinkCache(svc.ResolveLink)
	app.Get(Prefix+"/:token/events", limit, func(c *fiber.Ctx) error {
		return serveTicket(c, svc, runs, links, strings.Clone(c.Params("token")), opts)
	})
}

// serveTicket streams a link's ticket: the ticket when it connects, then
// again after every event of its run, each drawn from the run's view that
// stream.Runs built once for every ticket page of the run in this process
// (no read of storage per page and event). The link is read when it
// first connects (linkCache: a reconnect reads nothing while its run is
// followed); its expiry is a time (its turn's finish plus ExpireAfter),
// checked at every event without a read, and the stream's own timer (its
// connection's read deadline, OpenLoop's Due) ends it at that time: no
// poll.
func serveTicket(c *fiber.Ctx, svc *ticket.Service, runs *stream.Runs[*ticket.RunView], links *linkCache, value string, opts Options) error {
	ctx := c.UserContext()
	l, err := links.resolve(ctx, value)
	if err != nil {
		return err
	}
	m, first, err := runs.Join(ctx, l.AccountID, l.RunID)
	if err != nil {
		return err
	}
	own, ok := first.View.Waiting[l.TurnID]
	if !ok {
		// Not waiting: its own view (called, finished: maybe expired),
		// the link being known.
		if own, err = svc.TurnOf(ctx, l); err != nil {
			m.Close()
			return err
		}
		own = first.View.Own(own)
	}
	if svc.Expired(own) {
		m.Close()
		return svc.ExpiredError(own)
	}
	help := first.View.LatestHelp(l.TurnID)
	ft := svc.TicketOf(l, own, first.View, help)
	firstTicket := &ft
	expired := func(w *streamhttp.Writer) bool {
		if !svc.Expired(own) {
			return false
		}
		w.Event("", "expired", map[string]any{"message": "this ticket has ended and its link has expired"})
		return true
	}
	streamhttp.OpenLoop(c, 0, opts.Heartbeat, streamhttp.Loop{
		Bind:    func(wake func()) { m.OnUpdate(wake) },
		Pending: m.Pending,
		Step: func(w *streamhttp.Writer) bool {
			if firstTicket != nil {
				w.Event("", "ticket", message{Ticket: *firstTicket})
				firstTicket = nil
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
				own = u.View.Own(own)
				help = u.View.OwnHelp(own.ID, help)
				if expired(w) {
					return true
				}
				w.Event(u.Entry.Event.ID, "ticket", message{Ticket: svc.TicketOf(l, own, u.View, help)})
			}
		},
		Beat: func(w *streamhttp.Writer) bool {
			if expired(w) {
				return true
			}
			w.Comment("heartbeat")
			return false
		},
		Due: func() time.Time {
			if d, ok := svc.ExpiresIn(own); ok {
				return time.Now().Add(d)
			}
			return time.Time{}
		},
		Close: m.Close,
	})
	return nil
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
