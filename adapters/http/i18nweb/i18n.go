// Package i18nweb serves the strings of the waiting-room pages (the
// display board and the customer's ticket page): one JSON catalogue per
// language under /i18n/{lang}.json, every key in each, and the small
// script both pages use to choose a language and format numbers and times
// for it. Embedded in the binary, like the pages: no build step.
package i18nweb

import (
	"embed"
	"encoding/json"
	"io/fs"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

//go:embed web
var webFiles embed.FS

// Prefix is where the catalogues are served.
const Prefix = "/i18n"

// Files are the served files: the catalogues and i18n.js.
func Files() fs.FS {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	return sub
}

// Register mounts GET /i18n/{file} on app, rate limited by limit (the
// display boards' budget: only their pages load these).
func Register(app *fiber.App, limit fiber.Handler) {
	files := Files()
	app.Get(Prefix+"/:file", limit, func(c *fiber.Ctx) error {
		name := c.Params("file")
		var ctype, path string
		switch {
		case name == "i18n.js":
			ctype, path = "text/javascript; charset=utf-8", name
		case strings.HasSuffix(name, ".json") && !strings.ContainsAny(name, "/\\"):
			ctype, path = "application/json; charset=utf-8", "i18n/"+name
		default:
			return platform.NotFound("catalogue", name)
		}
		b, err := fs.ReadFile(files, path)
		if err != nil {
			return platform.NotFound("catalogue", name)
		}
		c.Set(fiber.HeaderContentType, ctype)
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
		c.Set("X-Content-Type-Options", "nosniff")
		return c.Send(b)
	})
}

// Keys are the keys of the English catalogue, which every other has too.
func Keys() map[string]bool {
	b, err := fs.ReadFile(Files(), "i18n/en.json")
	if err != nil {
		panic(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	keys := make(map[string]bool, len(m))
	for k := range m {
		keys[k] = true
	}
	return keys
}
