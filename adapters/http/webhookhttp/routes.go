// Package webhookhttp is the REST adapter of the webhooks module (spec 4.9):
// endpoints, the delivery log and redelivery.
package webhookhttp

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/webhooks"
)

const list = "webhook-endpoints"

// Register mounts the webhook routes on the authenticated /api/v1 router.
func Register(r fiber.Router, svc *webhooks.Service, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeWebhooksRead), httpx.Require(accounts.ScopeWebhooksWrite)

	r.Get("/webhook-endpoints", read, httpx.List(cur, list, svc.List))
	r.Post("/webhook-endpoints", write, func(c *fiber.Ctx) error {
		var in webhooks.CreateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		ep, err := svc.Create(c.UserContext(), httpx.AccountOf(c), in)
		if err != nil {
			return err
		}
		// The one answer that carries the secret must not be kept by a
		// cache on the way.
		c.Set(fiber.HeaderCacheControl, "no-store")
		return httpx.Created(c, ep)
	})
	r.Delete("/webhook-endpoints/:webhookId", write, func(c *fiber.Ctx) error {
		ep, err := svc.Delete(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("webhookId")))
		if err != nil {
			return err
		}
		return httpx.OK(c, fiber.Map{"id": ep.ID, "deleted": true})
	})

	r.Get("/webhook-deliveries", read, func(c *fiber.Ctx) error {
		ds, err := svc.Deliveries(c.UserContext(), httpx.AccountOf(c))
		if err != nil {
			return err
		}
		// The log is the last 30 deliveries: one page, in the list envelope.
		return httpx.WritePage(c, cur, "webhook-deliveries", platform.Page[webhooks.Delivery]{Items: ds}, webhooks.RecentDeliveries)
	})
	r.Post("/webhook-deliveries/:deliveryId/redeliver", write, func(c *fiber.Ctx) error {
		if err := httpx.Decode(c, &struct{}{}); err != nil {
			return err
		}
		d, err := svc.Redeliver(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("deliveryId")))
		if err != nil {
			return err
		}
		return httpx.Created(c, d)
	})
}
