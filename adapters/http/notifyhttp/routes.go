// Package notifyhttp mounts the notifications routes: a turn's messages
// and a queue's settings under /api/v1, and the providers' callbacks
// (delivery statuses, customer replies, WhatsApp's verification
// handshake) under /notify, each checked by the provider's signature.
package notifyhttp

import (
	"crypto/subtle"
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

// SettingsPath is the account's own messaging settings, under /api/v1.
const SettingsPath = "/notification-settings"

// withCallbacks adds the addresses of the account's own callbacks, for
// its provider's console.
func withCallbacks(c *fiber.Ctx, v notify.AccountSettingsView, accountID string) notify.AccountSettingsView {
	base := httpx.PublicBase(c)
	v.Callbacks = &notify.CallbackURL{TwilioStatus: base + TwilioStatusPath + AccountPath(accountID),
		TwilioInbound: base + TwilioInboundPath + AccountPath(accountID), WhatsApp: base + WhatsAppPath + AccountPath(accountID)}
	return v
}

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
	// The account's own providers, templates, quiet hours and send rate:
	// credentials like a webhook endpoint's secret, so webhooks scopes.
	r.Get(SettingsPath, httpx.Require(accounts.ScopeWebhooksRead), func(c *fiber.Ctx) error {
		v, err := svc.AccountSettings(c.UserContext(), httpx.AccountOf(c))
		if err != nil {
			return err
		}
		return httpx.OK(c, withCallbacks(c, v, httpx.AccountOf(c)))
	})
	r.Put(SettingsPath, httpx.Require(accounts.ScopeWebhooksWrite), func(c *fiber.Ctx) error {
		var in notify.AccountSettingsInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		v, err := svc.PutAccountSettings(c.UserContext(), httpx.AccountOf(c), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, withCallbacks(c, v, httpx.AccountOf(c)))
	})
	r.Delete(SettingsPath, httpx.Require(accounts.ScopeWebhooksWrite), func(c *fiber.Ctx) error {
		if err := svc.DeleteAccountSettings(c.UserContext(), httpx.AccountOf(c)); err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
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
		s, err := svc.PutSettings(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("queueId")), in)
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
// the signature is the authentication): the operator's under /notify/...,
// and each account's own under /notify/.../{accountId}, checked with that
// account's secrets (AccountCallbacks).
func RegisterCallbacks(app fiber.Router, svc *notify.Service, cb Callbacks) {
	operator := func(*fiber.Ctx) (secrets, error) {
		return secrets{twilioToken: cb.TwilioAuthToken, appSecret: cb.WhatsAppAppSecret, verifyToken: cb.WhatsAppVerifyToken}, nil
	}
	mount(app, svc, cb, "", operator)
	// An account's own provider account calls back on paths that name
	// the account: the path picks the secret, never the (unverified)
	// body, and a status or reply so verified concerns only that
	// account's messages.
	own := func(c *fiber.Ctx) (secrets, error) {
		id := strings.Clone(c.Params("accountId"))
		a, err := svc.Credentials(c.UserContext(), id)
		if err != nil || a == nil {
			return secrets{}, err
		}
		sc := secrets{accountID: id}
		if a.Twilio != nil {
			sc.twilioToken = a.Twilio.AuthToken
		}
		if a.Cloud != nil {
			sc.appSecret, sc.verifyToken = a.Cloud.AppSecret, a.Cloud.VerifyToken
		}
		return sc, nil
	}
	mount(app, svc, cb, "/:accountId", own)
}

// secrets are what checks one callback; accountID is "" for the
// operator's.
type secrets struct {
	accountID                           string
	twilioToken, appSecret, verifyToken string
}

// AccountPath is the suffix of an account's own callback paths.
func AccountPath(accountID string) string { return "/" + url.PathEscape(accountID) }

func mount(app fiber.Router, svc *notify.Service, cb Callbacks, suffix string, secretsOf func(*fiber.Ctx) (secrets, error)) {
	reply := func(c *fiber.Ctx, sc secrets, from, text string) error {
		var err error
		if sc.accountID != "" {
			_, err = svc.ReplyIn(c.UserContext(), sc.accountID, from, text)
		} else {
			_, err = svc.Reply(c.UserContext(), from, text)
		}
		return err
	}
	{
		twilio := func(handle func(c *fiber.Ctx, sc secrets, form url.Values) error) fiber.Handler {
			return func(c *fiber.Ctx) error {
				form, err := url.ParseQuery(string(c.Body()))
				if err != nil {
					return platform.InvalidField("body", "form", "the body is not a form")
				}
				sc, err := secretsOf(c)
				if err != nil {
					return err
				}
				full := publicURL(c, cb.PublicURL)
				if !notifier.VerifyTwilio(sc.twilioToken, full, form, c.Get("X-Twilio-Signature")) {
					cb.Log.Warn("notify: a Twilio callback with a wrong signature", "url", full)
					return c.Status(fiber.StatusForbidden).SendString("bad signature")
				}
				return handle(c, sc, form)
			}
		}
		app.Post(TwilioStatusPath+suffix, twilio(func(c *fiber.Ctx, sc secrets, form url.Values) error {
			st := notifier.TwilioStatus(form.Get("MessageStatus"))
			if st != "" {
				r := notify.StatusReport{Provider: "twilio", ProviderMessageID: form.Get("MessageSid"), Status: st,
					ProviderCode: form.Get("ErrorCode"), AccountID: sc.accountID}
				if r.ProviderCode != "" {
					r.Error = "Twilio error " + r.ProviderCode
				}
				if _, err := svc.Report(c.UserContext(), r); err != nil {
					return err
				}
			}
			return c.SendStatus(fiber.StatusNoContent)
		}))
		app.Post(TwilioInboundPath+suffix, twilio(func(c *fiber.Ctx, sc secrets, form url.Values) error {
			from := strings.TrimPrefix(form.Get("From"), "whatsapp:")
			if err := reply(c, sc, from, form.Get("Body")); err != nil {
				return err
			}
			// An empty TwiML answer: no automatic reply.
			c.Set(fiber.HeaderContentType, "text/xml")
			return c.SendString(`<?xml version="1.0" encoding="UTF-8"?><Response></Response>`)
		}))
	}
	{
		app.Get(WhatsAppPath+suffix, func(c *fiber.Ctx) error {
			// Meta's verification handshake: echo the challenge when the
			// token is ours.
			sc, err := secretsOf(c)
			if err != nil {
				return err
			}
			if c.Query("hub.mode") != "subscribe" || sc.verifyToken == "" ||
				subtle.ConstantTimeCompare([]byte(c.Query("hub.verify_token")), []byte(sc.verifyToken)) != 1 {
				return c.Status(fiber.StatusForbidden).SendString("verification failed")
			}
			return c.SendString(c.Query("hub.challenge"))
		})
		app.Post(WhatsAppPath+suffix, func(c *fiber.Ctx) error {
			body := c.Body()
			sc, err := secretsOf(c)
			if err != nil {
				return err
			}
			if !notifier.VerifyWhatsApp(sc.appSecret, body, c.Get("X-Hub-Signature-256")) {
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
						r := notify.StatusReport{Provider: "whatsapp", ProviderMessageID: st.ID, Status: s, AccountID: sc.accountID}
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
						if err := reply(c, sc, "+"+strings.TrimPrefix(m.From, "+"), text); err != nil {
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
