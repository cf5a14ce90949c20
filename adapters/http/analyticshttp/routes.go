// Package analyticshttp is the REST adapter of the analytics module (spec
// 4.8): read only.
package analyticshttp

import (
	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/analytics"
)

// Register mounts the analytics routes on the authenticated /api/v1
// router.
func Register(r fiber.Router, svc *analytics.Service) {
	read := httpx.Require(accounts.ScopeAnalyticsRead)

	r.Get("/analytics/dashboard", read, func(c *fiber.Ctx) error {
		d, err := svc.Dashboard(c.UserContext(), httpx.AccountOf(c))
		if err != nil {
			return err
		}
		return httpx.OK(c, d)
	})
	r.Get("/analytics/summary", read, func(c *fiber.Ctx) error {
		var in analytics.SummaryInput
		args := c.Context().QueryArgs()
		// A parameter given empty (?from=) is given, and invalid; absent
		// takes the default.
		if args.Has("from") {
			in.From = new(string)
			*in.From = string(args.Peek("from"))
		}
		if args.Has("to") {
			in.To = new(string)
			*in.To = string(args.Peek("to"))
		}
		s, err := svc.Summary(c.UserContext(), httpx.AccountOf(c), in)
		if err != nil {
			return err
		}
		return httpx.OK(c, s)
	})
}
