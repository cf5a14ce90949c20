// Package queuehttp is the REST adapter of the queues module (spec 4.1):
// queues, their settings, stations and runs.
package queuehttp

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

const list = "queues"

// Register mounts the queue routes on the authenticated /api/v1 router.
func Register(r fiber.Router, svc *queues.Service, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeQueuesRead), httpx.Require(accounts.ScopeQueuesWrite)

	r.Get("/queues", read, func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, list)
		if err != nil {
			return err
		}
		p, err := svc.List(c.UserContext(), httpx.AccountOf(c), c.Query("entityId"), page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, list, p, page.Limit)
	})
	r.Post("/queues", write, httpx.Create(svc.Create))
	r.Get("/queues/:queueId", read, func(c *fiber.Ctx) error {
		q, err := svc.Get(c.UserContext(), httpx.AccountOf(c), c.Params("queueId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, q)
	})

	r.Put("/queues/:queueId/sla", write, put(svc.SetSLA))
	r.Put("/queues/:queueId/dispatch-flow", write, put(svc.SetDispatchFlow))
	r.Put("/queues/:queueId/whatsapp-capture", write, put(svc.SetWhatsappCapture))
	r.Put("/queues/:queueId/numbering-reset", write, put(svc.SetNumberingReset))
	r.Put("/queues/:queueId/cancellation-policy", write, put(svc.SetCancellationPolicy))

	r.Get("/queues/:queueId/stations", read, func(c *fiber.Ctx) error {
		st, err := svc.ListStations(c.UserContext(), httpx.AccountOf(c), c.Params("queueId"))
		if err != nil {
			return err
		}
		// At most 30 stations: always one page, in the list envelope.
		return httpx.WritePage(c, cur, "stations", platform.Page[queues.Station]{Items: st}, queues.MaxStations)
	})
	r.Post("/queues/:queueId/stations", write, func(c *fiber.Ctx) error {
		var in queues.StationInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		st, err := svc.CreateStation(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("queueId")), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, st)
	})
	r.Delete("/stations/:stationId", write, func(c *fiber.Ctx) error {
		st, err := svc.DeleteStation(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("stationId")))
		if err != nil {
			return err
		}
		return httpx.OK(c, st)
	})

	runOp := func(op func(ctx context.Context, accountID, id string) (queues.Run, error)) fiber.Handler {
		return func(c *fiber.Ctx) error {
			if err := httpx.Decode(c, &struct{}{}); err != nil {
				return err
			}
			run, err := op(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("runId")))
			if err != nil {
				return err
			}
			return httpx.Created(c, run)
		}
	}
	r.Post("/queue-runs/:runId/open", write, runOp(svc.OpenRun))
	r.Post("/queue-runs/:runId/close", write, runOp(svc.CloseRun))
	r.Post("/queue-runs/:runId/close-intake", write, runOp(func(ctx context.Context, a, id string) (queues.Run, error) {
		return svc.SetIntake(ctx, a, id, false)
	}))
	r.Post("/queue-runs/:runId/open-intake", write, runOp(func(ctx context.Context, a, id string) (queues.Run, error) {
		return svc.SetIntake(ctx, a, id, true)
	}))
}

// put adapts a settings use case to a PUT handler with a strict body.
func put[In any](op func(ctx context.Context, accountID, id string, in In) (queues.QueueView, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var in In
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		q, err := op(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("queueId")), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, q)
	}
}
