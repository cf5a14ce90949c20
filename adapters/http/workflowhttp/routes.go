// Package workflowhttp is the REST adapter of the workflow module (spec
// 4.7): connected-queue links.
package workflowhttp

import (
	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/workflow"
)

const list = "queue-links"

// Register mounts the link routes on the authenticated /api/v1 router.
func Register(r fiber.Router, svc *workflow.Service, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeWorkflowRead), httpx.Require(accounts.ScopeWorkflowWrite)
	account := func(c *fiber.Ctx) string { return httpx.PrincipalOf(c).AccountID }

	r.Get("/queue-links", read, func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, list)
		if err != nil {
			return err
		}
		p, err := svc.List(c.UserContext(), account(c), page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, list, p, page.Limit)
	})
	r.Post("/queue-links", write, func(c *fiber.Ctx) error {
		var in workflow.CreateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		l, err := svc.Create(c.UserContext(), account(c), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, l)
	})
	r.Get("/queue-links/:linkId", read, func(c *fiber.Ctx) error {
		l, err := svc.Get(c.UserContext(), account(c), c.Params("linkId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, l)
	})
	r.Patch("/queue-links/:linkId", write, func(c *fiber.Ctx) error {
		var in workflow.UpdateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		l, err := svc.Update(c.UserContext(), account(c), c.Params("linkId"), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, l)
	})
	r.Delete("/queue-links/:linkId", write, func(c *fiber.Ctx) error {
		l, err := svc.Delete(c.UserContext(), account(c), c.Params("linkId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, fiber.Map{"id": l.ID, "deleted": true})
	})
}
