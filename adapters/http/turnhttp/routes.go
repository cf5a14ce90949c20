// Package turnhttp is the REST adapter of the turns and dispatch modules
// (spec 4.2 and 4.3, forward excepted): taking and reading turns, and
// every dispatch operation on them.
package turnhttp

import (
	"context"
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/turns"
)

// HeaderReplayed marks the answer to a create that repeated an earlier
// one's idempotencyKey: the turn is the one created then, not a new one.
const HeaderReplayed = "Idempotent-Replayed"

// Register mounts the turn and dispatch routes on the authenticated
// /api/v1 router. Turn reads and dispatch reads need turns:read; taking
// and cancelling a turn need turns:write; every dispatch operation needs
// dispatch:write (spec 5).
func Register(r fiber.Router, svc *turns.Service, cur httpx.Cursors) {
	read := httpx.Require(accounts.ScopeTurnsRead)
	write := httpx.Require(accounts.ScopeTurnsWrite)
	dispatch := httpx.Require(accounts.ScopeDispatchWrite)
	// Cursors name the run's list, so one run's cursor is refused on
	// another's.
	turnList := func(c *fiber.Ctx) string { return "turns/" + c.Params("runId") }
	arrivalList := func(c *fiber.Ctx) string { return "arrivals/" + c.Params("runId") }

	body := createBody(svc)
	r.Post("/queue-runs/:runId/turns", write, func(c *fiber.Ctx) error {
		var in turns.CreateInput
		ext, err := body.Decode(c, &in)
		if err != nil {
			return err
		}
		in.Extensions = ext
		v, replayed, err := svc.Create(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("runId")), in)
		if err != nil {
			return err
		}
		if replayed {
			c.Set(HeaderReplayed, "true")
		}
		return writeView(c, fiber.StatusCreated, &v)
	})
	r.Get("/queue-runs/:runId/turns", read, func(c *fiber.Ctx) error {
		var raw []string
		for _, v := range c.Context().QueryArgs().PeekMulti("status") {
			raw = append(raw, string(v))
		}
		statuses, err := turns.ParseStatuses(raw)
		if err != nil {
			return err
		}
		page, err := httpx.ParsePage(c, cur, turnList(c))
		if err != nil {
			return err
		}
		p, err := svc.List(c.UserContext(), httpx.AccountOf(c), c.Params("runId"), turns.ListFilter{Statuses: statuses}, page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, turnList(c), p, page.Limit)
	})
	r.Get("/queue-runs/:runId/arrivals", read, func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, arrivalList(c))
		if err != nil {
			return err
		}
		p, err := svc.Arrivals(c.UserContext(), httpx.AccountOf(c), c.Params("runId"), page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, arrivalList(c), p, page.Limit)
	})
	r.Get("/turns/:turnId", read, func(c *fiber.Ctx) error {
		v, err := svc.Get(c.UserContext(), httpx.AccountOf(c), c.Params("turnId"))
		if err != nil {
			return err
		}
		return writeView(c, fiber.StatusOK, &v)
	})
	r.Post("/turns/:turnId/cancel", write, op(svc.Cancel))

	r.Post("/queue-runs/:runId/dispatch/next", dispatch, func(c *fiber.Ctx) error {
		var in turns.CallInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		v, err := svc.Next(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("runId")), in)
		if err != nil {
			return err
		}
		return writeView(c, fiber.StatusCreated, &v)
	})
	r.Post("/turns/:turnId/call", dispatch, withBody(svc.Call))
	r.Post("/turns/:turnId/assign-station", dispatch, withBody(svc.AssignStation))
	r.Post("/turns/:turnId/priority", dispatch, withBody(svc.SetPriority))
	r.Post("/turns/:turnId/arrive", dispatch, op(svc.Arrive))
	r.Post("/turns/:turnId/start", dispatch, op(svc.Start))
	r.Post("/turns/:turnId/complete", dispatch, op(svc.Complete))
	r.Post("/turns/:turnId/no-show", dispatch, op(svc.NoShow))
	r.Post("/turns/:turnId/hold", dispatch, op(svc.Hold))
	r.Post("/turns/:turnId/release", dispatch, op(svc.Release))
	r.Post("/turns/:turnId/reopen", dispatch, op(svc.Reopen))
}

// op adapts an operation without a body; a body, if sent, must be {}.
func op(f func(ctx context.Context, accountID, id string) (turns.View, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := httpx.Decode(c, &struct{}{}); err != nil {
			return err
		}
		v, err := f(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("turnId")))
		if err != nil {
			return err
		}
		return writeView(c, fiber.StatusCreated, &v)
	}
}

// withBody adapts an operation with a strict body.
func withBody[In any](f func(ctx context.Context, accountID, id string, in In) (turns.View, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var in In
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		v, err := f(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("turnId")), in)
		if err != nil {
			return err
		}
		return writeView(c, fiber.StatusCreated, &v)
	}
}

// createBody is the turn create body with the members other modules
// declare (turns.BodyMember), decoded as one strict body.
func createBody(svc *turns.Service) *httpx.ExtendedBody {
	var members []httpx.Member
	for _, m := range svc.BodyMembers() {
		members = append(members, httpx.Member{Name: m.Name, Type: reflect.TypeOf(m.Zero)})
	}
	return httpx.NewExtendedBody((*turns.CreateInput)(nil), members)
}
