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
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
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

// Assets are the served files (the catalogues and i18n.js) under
// /i18n/: the pages link to i18n.js by its versioned address
// (Assets().Versioned(page)), and the script asks for the catalogues with
// the same version.
var Assets = sync.OnceValue(func() *httpx.AssetSet { return httpx.NewAssets(Files(), ".", Prefix+"/") })

// Register mounts GET /i18n/{file} on app. Static files are not rate
// limited: every phone of a waiting room behind one address loads them,
// and browsers cache them (versioned, ETag).
func Register(app *fiber.App) {
	app.Get(Prefix+"/:file", Assets().Handler())
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
