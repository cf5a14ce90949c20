package httpx

import "github.com/gofiber/fiber/v2"

// RouteTemplate is the template of the route that handled c (for example
// /api/v1/queues/:queueId), or "-" when no route matched (404, 405, or a
// request refused before routing). It is the label the access log uses, and
// the one metrics must use too: ids in a label would explode its
// cardinality. Call it after the chain has run and any error has gone
// through the error handler, which is what marks a request unmatched.
func RouteTemplate(c *fiber.Ctx) string { return routeOf(c) }
