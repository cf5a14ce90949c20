package openapi

import (
	"embed"
	"io/fs"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// Path is where the document is served.
const Path = "/api/v1/openapi.json"

//go:embed spec/*.yaml
var embedded embed.FS

// Fragments returns the embedded fragment files (spec/*.yaml).
func Fragments() fs.FS {
	sub, err := fs.Sub(embedded, "spec")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return sub
}

var document = sync.OnceValues(func() ([]byte, error) { return Assemble(Fragments()) })

// Document returns the assembled document as JSON. It is built once; an
// error means the embedded fragments conflict or are inconsistent.
func Document() ([]byte, error) { return document() }

// MustDocument is Document for start-up: it panics on an error, so a
// document that does not assemble stops the process before it listens.
func MustDocument() []byte {
	b, err := Document()
	if err != nil {
		panic(err)
	}
	return b
}

// Handler serves the document. It assembles the document when called, so
// mounting it at start-up is what makes a broken document fail loudly.
func Handler() fiber.Handler {
	doc := MustDocument()
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		return c.Status(fiber.StatusOK).Send(doc)
	}
}
