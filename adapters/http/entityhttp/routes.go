// Package entityhttp is the REST adapter of the entities module (spec 4.6).
package entityhttp

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/entities"
)

const list = "entities"

// Register mounts the entity routes on the authenticated /api/v1 router.
func Register(r fiber.Router, svc *entities.Service, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeEntitiesRead), httpx.Require(accounts.ScopeEntitiesWrite)

	r.Get("/entities", read, httpx.List(cur, list, svc.List))
	r.Post("/entities", write, httpx.Create(svc.Create))
	r.Patch("/entities/:entityId", write, func(c *fiber.Ctx) error {
		var in entities.UpdateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		e, err := svc.Update(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("entityId")), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, e)
	})
	r.Delete("/entities/:entityId", write, func(c *fiber.Ctx) error {
		id := strings.Clone(c.Params("entityId"))
		if err := svc.Delete(c.UserContext(), httpx.AccountOf(c), id); err != nil {
			return err
		}
		return httpx.OK(c, fiber.Map{"id": id, "deleted": true})
	})
}
