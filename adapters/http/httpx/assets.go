package httpx

import (
	"io/fs"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

// Assets serves the scripts and stylesheets of an embedded page (the
// display board, the ticket page) from assets by the route's :file
// parameter; any other name is 404, so nothing else embedded is exposed.
func Assets(assets fs.FS) fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("file")
		var ctype string
		switch {
		case strings.HasSuffix(name, ".js"):
			ctype = "text/javascript; charset=utf-8"
		case strings.HasSuffix(name, ".css"):
			ctype = "text/css; charset=utf-8"
		default:
			return platform.NotFound("asset", name)
		}
		b, err := fs.ReadFile(assets, name)
		if err != nil {
			return platform.NotFound("asset", name)
		}
		c.Set(fiber.HeaderContentType, ctype)
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
		return c.Send(b)
	}
}
