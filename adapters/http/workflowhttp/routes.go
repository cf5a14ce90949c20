// Package workflowhttp is the REST adapter of the workflow module (spec
// 4.7): connected-queue links.
package workflowhttp

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/workflow"
)

const (
	list        = "queue-links"
	forwardList = "queue-link-forwards"
)

// Register mounts the link and forwarding routes on the authenticated
// /api/v1 router.
func Register(r fiber.Router, svc *workflow.Service, fwd *workflow.Forwarder, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeWorkflowRead), httpx.Require(accounts.ScopeWorkflowWrite)

	r.Get("/queue-links", read, httpx.List(cur, list, svc.List))
	r.Post("/queue-links", write, httpx.Create(svc.Create))
	r.Get("/queue-links/:linkId", read, func(c *fiber.Ctx) error {
		l, err := svc.Get(c.UserContext(), httpx.AccountOf(c), c.Params("linkId"))
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
		l, err := svc.Update(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("linkId")), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, l)
	})
	r.Delete("/queue-links/:linkId", write, func(c *fiber.Ctx) error {
		l, err := svc.Delete(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("linkId")))
		if err != nil {
			return err
		}
		return httpx.OK(c, fiber.Map{"id": l.ID, "deleted": true})
	})

	// Forwarding: spec 4.3 puts forward in the dispatch module.
	r.Post("/turns/:turnId/forward", httpx.Require(accounts.ScopeDispatchWrite), func(c *fiber.Ctx) error {
		var in workflow.ForwardInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		f, err := fwd.ForwardNow(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("turnId")), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, f)
	})
	// A transfer by hand to any turn queue, no link needed: the queue's
	// transferEnabled (docs/queues.md). A dispatch operation, like
	// forward.
	r.Post("/turns/:turnId/transfer", httpx.Require(accounts.ScopeDispatchWrite), func(c *fiber.Ctx) error {
		var in workflow.TransferInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		t, err := fwd.Transfer(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("turnId")), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, t)
	})
	// Where forwards and their failures are visible.
	r.Get("/queue-links/:linkId/forwards", read, func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, forwardList)
		if err != nil {
			return err
		}
		p, err := fwd.OfLink(c.UserContext(), httpx.AccountOf(c), c.Params("linkId"), page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, forwardList, p, page.Limit)
	})
	r.Get("/turns/:turnId/forwards", read, func(c *fiber.Ctx) error {
		fs, err := fwd.OfTurn(c.UserContext(), httpx.AccountOf(c), c.Params("turnId"))
		if err != nil {
			return err
		}
		// At most one forward per link of the turn's queue: one page.
		return httpx.WritePage(c, cur, forwardList, platform.Page[workflow.Forward]{Items: fs}, max(len(fs), 1))
	})
}
