package turnhttp

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/turns"
)

// RegisterPoints mounts the reads of the queue's offers (loyalty points,
// docs/queues.md): a phone's points in a queue, and what a turn earned.
// Both need turns:read.
func RegisterPoints(r fiber.Router, svc *turns.Service) {
	read := httpx.Require(accounts.ScopeTurnsRead)
	r.Get("/queues/:queueId/points", read, func(c *fiber.Ctx) error {
		p, err := svc.PhonePoints(c.UserContext(), httpx.AccountOf(c), c.Params("queueId"), strings.Clone(c.Query("phone")))
		if err != nil {
			return err
		}
		return httpx.OK(c, p)
	})
	r.Get("/turns/:turnId/points", read, func(c *fiber.Ctx) error {
		p, err := svc.PointsOfTurn(c.UserContext(), httpx.AccountOf(c), c.Params("turnId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, p)
	})
}
