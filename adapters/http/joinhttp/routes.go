// Package joinhttp is the HTTP adapter of the public join page: the API
// that makes, lists and revokes join links (under /api/v1, with an API
// key), and the page a customer's phone opens from the QR code at the
// door, under /join/{token}: HTML, CSS and JavaScript embedded in the
// binary (no build step), a JSON read of what the page shows, the join
// itself (which lands on the new turn's live ticket page), a QR code and a
// printable poster of the link. It also serves the ticket page's
// auto-arrival by location (POST /ticket/{token}/arrive) and its script.
//
// The /join routes take no API key: the link is the capability, and it
// opens one queue's join page and nothing else. Joins spend budgets of
// their own, per client address and per link, and a signed cookie bounds
// the open turns one phone holds in a queue.
package joinhttp

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	qrcode "github.com/skip2/go-qrcode"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/i18nweb"
	"github.com/qms-dev/qms/adapters/http/signed"
	"github.com/qms-dev/qms/adapters/http/tickethttp"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/join"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

//go:embed web
var webFiles embed.FS

// Prefix is where the join pages are served.
const Prefix = "/join"

const list = "join-links"

// created is the link creation response: the link with its value, the
// page's URL and its QR code's, shown once.
type created struct {
	join.Created
	URL       string `json:"url"`
	QRURL     string `json:"qrUrl"`
	PosterURL string `json:"posterUrl"`
}

func pageURL(c *fiber.Ctx, value string) string { return httpx.PublicBase(c) + Prefix + "/" + value }

// RegisterAPI mounts the link routes on the authenticated /api/v1 router:
// made and revoked with queues:write, listed with queues:read.
func RegisterAPI(r fiber.Router, svc *join.Service, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeQueuesRead), httpx.Require(accounts.ScopeQueuesWrite)
	r.Post("/queues/:queueId/join-links", write, func(c *fiber.Ctx) error {
		var in join.CreateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		l, err := svc.Create(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("queueId")), in)
		if err != nil {
			return err
		}
		u := pageURL(c, l.Value)
		return httpx.Created(c, created{Created: l, URL: u, QRURL: u + "/qr.svg", PosterURL: u + "/poster"})
	})
	r.Get("/queues/:queueId/join-links", read, func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, list)
		if err != nil {
			return err
		}
		p, err := svc.List(c.UserContext(), httpx.AccountOf(c), c.Params("queueId"), page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, list, p, page.Limit)
	})
	r.Delete("/join-links/:linkId", write, func(c *fiber.Ctx) error {
		l, err := svc.Revoke(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("linkId")))
		if err != nil {
			return err
		}
		return httpx.OK(c, l)
	})
}

// Options are the page's budgets and the key of its device cookie.
type Options struct {
	// PerAddressPerMinute and PerLinkPerMinute are the join budgets
	// (config join.*).
	PerAddressPerMinute int
	PerLinkPerMinute    int
	// CookieKey signs the device cookie; every process of a deployment
	// must share it (DeriveCookieKey).
	CookieKey []byte
	// Now is the budgets' clock (time.Now when nil).
	Now func() time.Time
}

// DeriveCookieKey is the device cookie's key, derived from a deployment
// secret every process shares (the cursor secret, else the admin token),
// so no new setting is needed and no two purposes share a key.
func DeriveCookieKey(secret string) []byte { return signed.Derive(secret, "qms join device cookie") }

// securityHeaders are the pages': never cached, never sent on as a
// referrer (the address is the capability), not indexed, nothing from
// elsewhere, location allowed to this origin only.
func securityHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("X-Robots-Tag", "noindex")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Permissions-Policy", "geolocation=(self)")
}

const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// joinedBody is a join's answer: the turn, and its ticket page.
type joinedBody struct {
	join.Joined
	TicketURL string `json:"ticketUrl"`
}

// arriveBody is the ticket page's location report.
type arriveBody struct {
	Location *join.Position `json:"location"`
}

// RegisterPage mounts the public join routes on app, and the ticket
// page's arrival route. limit is the waiting-room pages' budget (by
// client address) the reads ride; joins spend their own budgets on top.
func RegisterPage(app *fiber.App, svc *join.Service, lim ports.RateLimiter, limit fiber.Handler, opts Options) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	assets, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	page, err := fs.ReadFile(assets, "join.html")
	if err != nil {
		panic(err)
	}
	poster := template.Must(template.ParseFS(assets, "poster.html"))
	cookies, err := newSigner(opts.CookieKey)
	if err != nil {
		panic("joinhttp: " + err.Error() + " (Options.CookieKey, DeriveCookieKey)")
	}
	perAddress := httpx.RateLimitBudget(lim, opts.PerAddressPerMinute, opts.Now, "join")

	app.Get(Prefix+"/assets/:file", limit, httpx.Assets(assets))
	app.Get(Prefix+"/:token", limit, func(c *fiber.Ctx) error {
		// One page for every link; a refused link still gets it, under
		// its status (404, 410), and the page says why.
		securityHeaders(c)
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		c.Set("Content-Security-Policy", pageCSP)
		if _, err := svc.Resolve(c.UserContext(), strings.Clone(c.Params("token"))); err != nil {
			e, domain := platform.AsError(err)
			if !domain {
				return err
			}
			c.Status(httpx.StatusOf(e.Kind))
		}
		return c.Send(page)
	})
	app.Get(Prefix+"/:token/state", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		_, p, err := svc.Read(c.UserContext(), strings.Clone(c.Params("token")))
		if err != nil {
			return err
		}
		return httpx.OK(c, p)
	})
	app.Post(Prefix+"/:token", limit, perAddress, func(c *fiber.Ctx) error {
		securityHeaders(c)
		value := strings.Clone(c.Params("token"))
		if err := spendLink(c, lim, opts, value); err != nil {
			return err
		}
		var in join.Input
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		l, err := svc.Resolve(c.UserContext(), value)
		if err != nil {
			return err
		}
		dev := cookies.read(c)
		j, err := svc.Join(c.UserContext(), value, in, join.Device{TurnIDs: dev.turnsOf(l.QueueID)})
		if err != nil {
			return err
		}
		if !l.Kiosk {
			// A kiosk is everyone's device: it keeps nothing.
			dev.add(j.QueueID, j.TurnID)
			cookies.write(c, dev)
		}
		return httpx.Created(c, joinedBody{Joined: j, TicketURL: httpx.PublicBase(c) + tickethttp.Prefix + "/" + j.Ticket})
	})
	qr := func(c *fiber.Ctx) (*qrcode.QRCode, error) {
		value := strings.Clone(c.Params("token"))
		if _, err := svc.Resolve(c.UserContext(), value); err != nil {
			return nil, err
		}
		q, err := qrcode.New(pageURL(c, value), qrcode.Medium)
		if err != nil {
			return nil, fmt.Errorf("join: making a QR code: %w", err)
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
		return c.SendString(tickethttp.QRCodeSVG(q.Bitmap()))
	})
	app.Get(Prefix+"/:token/qr.png", limit, func(c *fiber.Ctx) error {
		q, err := qr(c)
		if err != nil {
			return err
		}
		b, err := q.PNG(-8)
		if err != nil {
			return fmt.Errorf("join: drawing a QR code: %w", err)
		}
		securityHeaders(c)
		c.Set(fiber.HeaderContentType, "image/png")
		return c.Send(b)
	})
	app.Get(Prefix+"/:token/poster", limit, func(c *fiber.Ctx) error {
		value := strings.Clone(c.Params("token"))
		_, p, err := svc.Read(c.UserContext(), value)
		if err != nil {
			return err
		}
		q, err := qrcode.New(pageURL(c, value), qrcode.Medium)
		if err != nil {
			return fmt.Errorf("join: making a QR code: %w", err)
		}
		lang := c.Query("lang")
		if lang == "" && p.Language != nil {
			lang = *p.Language
		}
		paper := "a4"
		if strings.EqualFold(c.Query("paper"), "letter") {
			paper = "letter"
		}
		str, lang := catalogue(lang)
		securityHeaders(c)
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		c.Set("Content-Security-Policy", pageCSP)
		var b strings.Builder
		err = poster.Execute(&b, posterData{
			Lang: lang, Paper: paper, Queue: p.Queue.Name, Branch: p.Branch.Name, Subtitle: p.Queue.Subtitle,
			QR:    template.HTML(tickethttp.QRCodeSVG(q.Bitmap())), // drawn here from a bitmap: no input reaches it
			Title: str["poster.title"], Lines: []string{str["poster.line1"], str["poster.line2"], str["poster.line3"]},
			URL: pageURL(c, value),
		})
		if err != nil {
			return fmt.Errorf("join: drawing the poster: %w", err)
		}
		return c.SendString(b.String())
	})
	app.Post(tickethttp.Prefix+"/:token/arrive", limit, func(c *fiber.Ctx) error {
		securityHeaders(c)
		var in arriveBody
		if len(c.Body()) > 0 {
			if err := httpx.Decode(c, &in); err != nil {
				return err
			}
		}
		a, err := svc.Arrive(c.UserContext(), strings.Clone(c.Params("token")), in.Location)
		if err != nil {
			return err
		}
		return httpx.OK(c, a)
	})
}

// spendLink spends one join of the link's budget, keyed by the value's
// hash (the value itself is never a key anywhere).
func spendLink(c *fiber.Ctx, lim ports.RateLimiter, opts Options, value string) error {
	now := opts.Now()
	d, err := lim.Allow(c.UserContext(), "joinlink:"+join.Hash(value)[:32], opts.PerLinkPerMinute, now)
	if err != nil {
		return nil // as the other budgets: a limiter outage lets requests through
	}
	if !d.Allowed {
		wait := int64(max((d.Reset.Sub(now)+time.Second-1)/time.Second, 1))
		c.Set(httpx.HeaderRetryAfter, fmt.Sprint(wait))
		return platform.NewError(platform.KindRateLimited, platform.CodeRateLimited,
			fmt.Sprintf("this join link takes at most %d turns a minute; retry in %d seconds", d.Limit, wait),
			map[string]any{"limit": d.Limit, "retryAfter": wait, "reset": d.Reset.Unix(), "budget": "link"})
	}
	return nil
}

// posterData fills poster.html.
type posterData struct {
	Lang, Paper, Queue, Branch string
	Subtitle                   *string
	QR                         template.HTML
	Title                      string
	Lines                      []string
	URL                        string
}

// catalogue is the strings of lang (English when it has none) and the
// language they are in.
func catalogue(lang string) (map[string]string, string) {
	files := i18nweb.Files()
	for _, l := range []string{lang, "en"} {
		if l == "" || strings.ContainsAny(l, "/\\.") {
			continue
		}
		b, err := fs.ReadFile(files, "i18n/"+l+".json")
		if err != nil {
			continue
		}
		var m map[string]string
		if json.Unmarshal(b, &m) == nil {
			return m, l
		}
	}
	return map[string]string{}, "en"
}
