// Package appointmenthttp is the REST adapter of the appointments module
// (spec 4.4): slots of a run, appointments and their lifecycle operations.
package appointmenthttp

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/platform"
)

// Register mounts the appointment routes on the authenticated /api/v1
// router.
func Register(r fiber.Router, svc *appointments.Service, cur httpx.Cursors) {
	read, write := httpx.Require(accounts.ScopeAppointmentsRead), httpx.Require(accounts.ScopeAppointmentsWrite)
	// Cursors name the run's list, so a cursor of one run's list is refused
	// on another's.
	slotList := func(c *fiber.Ctx) string { return "slots/" + runID(c) }
	appointmentList := func(c *fiber.Ctx) string { return "appointments/" + runID(c) }

	r.Post("/queue-runs/:runId/slots", write, func(c *fiber.Ctx) error {
		var in appointments.GenerateInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		b, err := svc.GenerateSlots(c.UserContext(), httpx.AccountOf(c), runID(c), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, b)
	})
	r.Get("/queue-runs/:runId/slots", read, func(c *fiber.Ctx) error {
		available, err := parseAvailable(c)
		if err != nil {
			return err
		}
		page, err := httpx.ParsePage(c, cur, slotList(c))
		if err != nil {
			return err
		}
		f := appointments.SlotFilter{Available: available, Date: c.Query("date")}
		p, err := svc.ListSlots(c.UserContext(), httpx.AccountOf(c), runID(c), f, page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, slotList(c), p, page.Limit)
	})

	r.Post("/queue-runs/:runId/appointments", write, func(c *fiber.Ctx) error {
		var in appointments.ScheduleInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		a, err := svc.Schedule(c.UserContext(), httpx.AccountOf(c), runID(c), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, a)
	})
	r.Get("/queue-runs/:runId/appointments", read, func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, appointmentList(c))
		if err != nil {
			return err
		}
		f := appointments.ListFilter{Status: appointments.Status(c.Query("status")), Date: c.Query("date")}
		p, err := svc.List(c.UserContext(), httpx.AccountOf(c), runID(c), f, page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, appointmentList(c), p, page.Limit)
	})
	r.Get("/appointments/:id", read, func(c *fiber.Ctx) error {
		a, err := svc.Get(c.UserContext(), httpx.AccountOf(c), appointmentID(c))
		if err != nil {
			return err
		}
		return httpx.OK(c, a)
	})

	for _, action := range []appointments.Action{
		appointments.ActionCancel, appointments.ActionCheckIn, appointments.ActionStart,
		appointments.ActionComplete, appointments.ActionNoShow,
	} {
		r.Post("/appointments/:id/"+string(action), write, func(c *fiber.Ctx) error {
			// The operations take no body: {} or nothing, anything else is
			// refused like every strict body.
			if err := httpx.Decode(c, &struct{}{}); err != nil {
				return err
			}
			a, err := svc.Do(c.UserContext(), httpx.AccountOf(c), appointmentID(c), action)
			if err != nil {
				return err
			}
			return httpx.Created(c, a)
		})
	}
}

// runID and appointmentID copy the path parameter: c.Params aliases
// fasthttp's request buffer, reused by the next request, and the ids reach
// repositories that may keep them (memory storage does).
func runID(c *fiber.Ctx) string         { return strings.Clone(c.Params("runId")) }
func appointmentID(c *fiber.Ctx) string { return strings.Clone(c.Params("id")) }

// parseAvailable reads the available query parameter of the slot list.
// The spec declares it required; qms reads an absent one as false (every
// slot), so a plain GET lists the run's slots. Present, it must be true or
// false, in lower case like every JSON boolean.
func parseAvailable(c *fiber.Ctx) (bool, error) {
	args := c.Context().QueryArgs()
	if !args.Has("available") {
		return false, nil
	}
	switch string(args.Peek("available")) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, platform.InvalidField("available", "oneof", "must be true or false")
}
