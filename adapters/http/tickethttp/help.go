package tickethttp

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/ticket"
)

// registerHelpAPI mounts the staff side of help (docs/queues.md, "help"):
// a run's help requests (the counter console's list), a turn's, one by
// id, and the answer with one of the queue's quickReplies.
func registerHelpAPI(r fiber.Router, svc *ticket.Service, cur httpx.Cursors) {
	read := httpx.Require(accounts.ScopeTurnsRead)
	write := httpx.Require(accounts.ScopeTurnsWrite)
	runList := func(c *fiber.Ctx) string { return "help/" + c.Params("runId") + "/" + c.Query("status") }
	r.Get("/queue-runs/:runId/help-requests", read, func(c *fiber.Ctx) error {
		page, err := httpx.ParsePage(c, cur, runList(c))
		if err != nil {
			return err
		}
		p, err := svc.RunHelp(c.UserContext(), httpx.AccountOf(c), c.Params("runId"),
			ticket.HelpListFilter{Status: c.Query("status")}, page)
		if err != nil {
			return err
		}
		return httpx.WritePage(c, cur, runList(c), p, page.Limit)
	})
	r.Get("/turns/:turnId/help-requests", read, func(c *fiber.Ctx) error {
		hs, err := svc.TurnHelp(c.UserContext(), httpx.AccountOf(c), c.Params("turnId"))
		if err != nil {
			return err
		}
		// At most ticket.MaxHelpPerTurn: one page.
		return httpx.WritePage(c, cur, "help-turn", platform.Page[ticket.HelpRequest]{Items: hs}, max(len(hs), 1))
	})
	r.Get("/help-requests/:helpRequestId", read, func(c *fiber.Ctx) error {
		h, err := svc.GetHelp(c.UserContext(), httpx.AccountOf(c), c.Params("helpRequestId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, h)
	})
	r.Post("/help-requests/:helpRequestId/answer", write, func(c *fiber.Ctx) error {
		var in ticket.AnswerInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		h, err := svc.AnswerHelp(c.UserContext(), httpx.AccountOf(c), strings.Clone(c.Params("helpRequestId")), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, h)
	})
}
