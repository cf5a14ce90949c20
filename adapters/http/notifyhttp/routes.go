// Package notifyhttp mounts the notifications routes: a turn's messages
// and a queue's settings under /api/v1, and the providers' callbacks
// (delivery statuses, customer replies, WhatsApp's verification
// handshake) under /notify, each checked by the provider's signature.
package notifyhttp

import (
	"encoding/json"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/notifier"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
)

// Paths of the providers' callbacks.
const (
	TwilioStatusPath  = "/notify/twilio/status"
	TwilioInboundPath = "/notify/twilio/inbound"
	WhatsAppPath      = "/notify/whatsapp"
)

// Owners checks that a turn, an appointment or a queue is the account's
// (403/404 as everywhere).
type Owners interface {
	Turn(c *fiber.Ctx, turnID string) error
	Appointment(c *fiber.Ctx, appointmentID string) error
	Queue(c *fiber.Ctx, queueID string) error
}

// RegisterAPI mounts the /api/v1 routes.
func RegisterAPI(r fiber.Router, svc *notify.Service, own Owners) {
	r.Get("/turns/:turnId/notifications", httpx.Require(accounts.ScopeTurnsRead), func(c *fiber.Ctx) error {
		if err := own.Turn(c, c.Params("turnId")); err != nil {
			return err
		}
		ms, err := svc.List(c.UserContext(), c.Params("turnId"))
		if err != nil {
			return err
		}
		if ms == nil {
			ms = []notify.Message{}
		}
		return httpx.OK(c, fiber.Map{"data": ms})
	})
	r.Get("/appointments/:id/notifications", httpx.Require(accounts.ScopeAppointmentsRead), func(c *fiber.Ctx) error {
		if err := own.Appointment(c, c.Params("id")); err != nil {
			return err
		}
		ms, err := svc.ListForAppointment(c.UserContext(), c.Params("id"))
		if err != nil {
			return err
		}
		if ms == nil {
			ms = []notify.Message{}
		}
		return httpx.OK(c, fiber.Map{"data": ms})
	})
	r.Get("/queues/:queueId/notifications", httpx.Require(accounts.ScopeQueuesRead), func(c *fiber.Ctx) error {
		if err := own.Queue(c, c.Params("queueId")); err != nil {
			return err
		}
		s, err := svc.Settings(c.UserContext(), c.Params("queueId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, s)
	})
	r.Put("/queues/:queueId/notifications", httpx.Require(accounts.ScopeQueuesWrite), func(c *fiber.Ctx) error {
		if err := own.Queue(c, c.Params("queueId")); err != nil {
			return err
		}
		var in notify.QueueSettings
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		s, err := svc.PutSettings(c.UserContext(), httpx.AccountOf(c), c.Params("queueId"), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, s)
	})
}

// Callbacks are the providers' secrets that sign their callbacks. The
// routes are always mounted: without its secret a provider's callbacks are
// all refused (403), as a forged one is.
type Callbacks struct {
	TwilioAuthToken     string
	WhatsAppAppSecret   string
	WhatsAppVerifyToken string
	// PublicURL is the base of the URLs the providers call (what Twilio
	// signs); empty: the request's own scheme and host.
	PublicURL string
	Log       *slog.Logger
}

// RegisterCallbacks mounts the providers' callbacks on app (no API key:
// the signature is the authentication).
func RegisterCallbacks(app fiber.Router, svc *notify.Service, cb Callbacks) {
	{
		twilio := func(handle func(c *fiber.Ctx, form url.Values) error) fiber.Handler {
			return func(c *fiber.Ctx) error {
				form, err := url.ParseQuery(string(c.Body()))
				if err != nil {
					return platform.InvalidField("body", "form", "the body is not a form")
				}
				full := publicURL(c, cb.PublicURL)
				if !notifier.VerifyTwilio(cb.TwilioAuthToken, full, form, c.Get("X-Twilio-Signature")) {
					cb.Log.Warn("notify: a Twilio callback with a wrong signature", "url", full)
					return c.Status(fiber.StatusForbidden).SendString("bad signature")
				}
				return handle(c, form)
			}
		}
		app.Post(TwilioStatusPath, twilio(func(c *fiber.Ctx, form url.Values) error {
			st := notifier.TwilioStatus(form.Get("MessageStatus"))
			if st != "" {
				r := notify.StatusReport{Provider: "twilio", ProviderMessageID: form.Get("MessageSid"), Status: st,
					ProviderCode: form.Get("ErrorCode")}
				if r.ProviderCode != "" {
					r.Error = "Twilio error " + r.ProviderCode
				}
				if _, err := svc.Report(c.UserContext(), r); err != nil {
					return err
				}
			}
			return c.SendStatus(fiber.StatusNoContent)
		}))
		app.Post(TwilioInboundPath, twilio(func(c *fiber.Ctx, form url.Values) error {
			from := strings.TrimPrefix(form.Get("From"), "whatsapp:")
			if _, err := svc.Reply(c.UserContext(), from, form.Get("Body")); err != nil {
				return err
			}
			// An empty TwiML answer: no automatic reply.
			c.Set(fiber.HeaderContentType, "text/xml")
			return c.SendString(`<?xml version="1.0" encoding="UTF-8"?><Response></Response>`)
		}))
	}
	{
		app.Get(WhatsAppPath, func(c *fiber.Ctx) error {
			// Meta's verification handshake: echo the challenge when the
			// token is ours.
			if c.Query("hub.mode") != "subscribe" || cb.WhatsAppVerifyToken == "" || c.Query("hub.verify_token") != cb.WhatsAppVerifyToken {
				return c.Status(fiber.StatusForbidden).SendString("verification failed")
			}
			return c.SendString(c.Query("hub.challenge"))
		})
		app.Post(WhatsAppPath, func(c *fiber.Ctx) error {
			body := c.Body()
			if !notifier.VerifyWhatsApp(cb.WhatsAppAppSecret, body, c.Get("X-Hub-Signature-256")) {
				cb.Log.Warn("notify: a WhatsApp webhook with a wrong signature")
				return c.Status(fiber.StatusForbidden).SendString("bad signature")
			}
			var hook notifier.WhatsAppWebhook
			if err := json.Unmarshal(body, &hook); err != nil {
				return platform.InvalidField("body", "json", "the body is not a WhatsApp webhook")
			}
			for _, e := range hook.Entry {
				for _, ch := range e.Changes {
					for _, st := range ch.Value.Statuses {
						s := notifier.WhatsAppStatus(st.Status)
						if s == "" {
							continue
						}
						r := notify.StatusReport{Provider: "whatsapp", ProviderMessageID: st.ID, Status: s}
						if len(st.Errors) > 0 {
							r.ProviderCode, r.Error = strconv.Itoa(st.Errors[0].Code), st.Errors[0].Title
						}
						if _, err := svc.Report(c.UserContext(), r); err != nil {
							return err
						}
					}
					for _, m := range ch.Value.Messages {
						text := ""
						if m.Text != nil {
							text = m.Text.Body
						} else if m.Button != nil {
							text = m.Button.Text
						}
						if _, err := svc.Reply(c.UserContext(), "+"+strings.TrimPrefix(m.From, "+"), text); err != nil {
							return err
						}
					}
				}
			}
			return c.SendStatus(fiber.StatusOK)
		})
	}
}

// publicURL is the URL the provider called: the configured public base
// and the request's path and query, else the request's own.
func publicURL(c *fiber.Ctx, base string) string {
	if base == "" {
		base = c.Protocol() + "://" + c.Hostname()
	}
	u := strings.TrimSuffix(base, "/") + c.Path()
	if q := string(c.Request().URI().QueryString()); q != "" {
		u += "?" + q
	}
	return u
}
