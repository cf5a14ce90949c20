// Package accesscodehttp is the REST adapter of the access-codes module
// (spec 4.5).
package accesscodehttp

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/accounts"
)

const list = "access-codes"

// BulkResponse is the answer to a bulk create: the codes created, in the
// order of the request.
type BulkResponse struct {
	Data  []accesscodes.AccessCode `json:"data"`
	Count int                      `json:"count"`
}

// Register mounts the access-code routes on the authenticated /api/v1
// router; guard answers which code a turn took.
func Register(r fiber.Router, svc *accesscodes.Service, guard *accesscodes.Guard, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeAccessCodesRead), httpx.Require(accounts.ScopeAccessCodesWrite)

	r.Get("/access-codes", read, httpx.List(cur, list, svc.List))
	r.Post("/access-codes", write, httpx.Create(svc.Create))
	r.Post("/access-codes/bulk", write, func(c *fiber.Ctx) error {
		var in accesscodes.BulkInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		codes, err := svc.CreateBulk(c.UserContext(), httpx.AccountOf(c), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, BulkResponse{Data: codes, Count: len(codes)})
	})
	r.Get("/access-codes/:id", read, func(c *fiber.Ctx) error {
		code, err := svc.Get(c.UserContext(), httpx.AccountOf(c), c.Params("id"))
		if err != nil {
			return err
		}
		return httpx.OK(c, code)
	})
	r.Post("/access-codes/:id/disable", write, func(c *fiber.Ctx) error {
		if err := httpx.Decode(c, &struct{}{}); err != nil {
			return err
		}
		code, err := svc.Disable(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("id")))
		if err != nil {
			return err
		}
		return httpx.Created(c, code)
	})
	// The code a turn was taken with, and the classification and
	// properties it gave the turn (a v1 extension: the turn view of spec
	// 4.2 has no place for them).
	r.Get("/turns/:turnId/access-code", read, func(c *fiber.Ctx) error {
		tc, err := guard.ForTurn(c.UserContext(), httpx.AccountOf(c), c.Params("turnId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, tc)
	})
}
