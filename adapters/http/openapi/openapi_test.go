package openapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gofiber/fiber/v2"
)

const testBase = `
openapi: 3.1.0
info: { title: t, version: 1.0.0 }
security: [{ apiKey: [] }]
paths: {}
components:
  securitySchemes:
    apiKey: { type: apiKey, in: header, name: X-API-Key }
  headers:
    X-Request-Id: { schema: { type: string } }
    X-RateLimit-Limit: { schema: { type: integer } }
    X-RateLimit-Remaining: { schema: { type: integer } }
    X-RateLimit-Reset: { schema: { type: integer } }
  responses:
    BadRequest: { description: x }
    Unauthorized: { description: x }
    PaymentRequired: { description: x }
    Forbidden: { description: x }
    PayloadTooLarge: { description: x }
    HeadersTooLarge: { description: x }
    RateLimited: { description: x }
    InternalError: { description: x }
    ServiceUnavailable: { description: x }
    UnsupportedMediaType: { description: x }
  schemas:
    Thing: { type: object }
`

const testThings = `
paths:
  /api/v1/things:
    get:
      operationId: listThings
      security: [{ apiKey: ["things:read"] }]
      responses:
        "200": { description: ok }
`

func assembleMap(t *testing.T, files map[string]string) (*object, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, text := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	return assemble(fsys)
}

func TestEmbeddedDocumentAssembles(t *testing.T) {
	b, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Info    struct{ Version string }  `json:"info"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.0.0" {
		t.Errorf("openapi %q, version %q", doc.OpenAPI, doc.Info.Version)
	}
	for _, p := range []string{"/api/v1/openapi.json", "/api/v1/entities", "/api/v1/queues/{queueId}", "/admin/v1/accounts"} {
		if doc.Paths[p] == nil {
			t.Errorf("path %s missing", p)
		}
	}
}

func TestConventionsAreApplied(t *testing.T) {
	root, err := assembleMap(t, map[string]string{"00-base.yaml": testBase, "10-things.yaml": testThings + `
    post:
      operationId: createThing
      security: [{ apiKey: ["things:write"] }]
      requestBody: { content: { application/json: { schema: { $ref: "#/components/schemas/Thing" } } } }
      responses:
        "201": { description: ok }
        "409": { description: mine }
`})
	if err != nil {
		t.Fatal(err)
	}
	post := root.obj("paths").obj("/api/v1/things").obj("post")
	resp := post.obj("responses")
	if got := strings.Join(resp.keys, ","); got != "201,400,401,402,403,409,413,415,429,431,500,503" {
		t.Errorf("responses = %s", got)
	}
	if resp.obj("409").str("description") != "mine" {
		t.Error("a declared response was replaced")
	}
	if h := resp.obj("201").obj("headers"); h == nil || !h.has("X-RateLimit-Remaining") || !h.has("X-Request-Id") {
		t.Errorf("201 headers = %v", h)
	}
	get := root.obj("paths").obj("/api/v1/things").obj("get").obj("responses")
	if get.has("415") {
		t.Error("415 added to an operation without a body")
	}
}

func TestConflictsFailLoudly(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"same path and method": {"00-base.yaml": testBase, "10-a.yaml": testThings, "20-b.yaml": testThings},
		"same schema": {"00-base.yaml": testBase, "10-a.yaml": `
components: { schemas: { Thing: { type: string } } }`},
		"same tag": {"00-base.yaml": testBase + "tags: [{ name: x }]\n", "10-a.yaml": "tags: [{ name: x }]\n"},
		"different path parameters": {"00-base.yaml": testBase, "10-a.yaml": testThings + `
    parameters: [{ name: a, in: query }]`, "20-b.yaml": `
paths:
  /api/v1/things:
    parameters: [{ name: b, in: query }]
    post:
      operationId: createThing
      security: [{ apiKey: ["things:write"] }]
      responses: { "201": { description: ok } }`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := assembleMap(t, files)
			if err == nil || !strings.Contains(err.Error(), "yaml:") {
				t.Fatalf("want an error naming both files, got %v", err)
			}
			t.Log(err)
		})
	}
}

func TestSamePathDifferentMethodsMerge(t *testing.T) {
	root, err := assembleMap(t, map[string]string{"00-base.yaml": testBase, "10-a.yaml": testThings, "20-b.yaml": `
paths:
  /api/v1/things:
    post:
      operationId: createThing
      security: [{ apiKey: ["things:write"] }]
      responses: { "201": { description: ok } }`})
	if err != nil {
		t.Fatal(err)
	}
	item := root.obj("paths").obj("/api/v1/things")
	if !item.has("get") || !item.has("post") {
		t.Errorf("path item = %v", item.keys)
	}
}

func TestInconsistentDocumentsAreRefused(t *testing.T) {
	for name, frag := range map[string]string{
		"info in a fragment": "info: { title: x, version: 2 }\n",
		"dangling ref": `
paths:
  /api/v1/things:
    get:
      operationId: listThings
      security: [{ apiKey: ["things:read"] }]
      responses: { "200": { description: ok, content: { application/json: { schema: { $ref: "#/components/schemas/Nope" } } } } }`,
		"undeclared path parameter": `
paths:
  /api/v1/things/{id}:
    get:
      operationId: getThing
      security: [{ apiKey: ["things:read"] }]
      responses: { "200": { description: ok } }`,
		"no scope": `
paths:
  /api/v1/things:
    get:
      operationId: listThings
      responses: { "200": { description: ok } }`,
		"duplicate operationId": testThings + `
  /api/v1/others:
    get:
      operationId: listThings
      security: [{ apiKey: ["things:read"] }]
      responses: { "200": { description: ok } }`,
		"no success response": `
paths:
  /api/v1/things:
    get:
      operationId: listThings
      security: [{ apiKey: ["things:read"] }]
      responses: { "404": { description: no } }`,
		"repeated key": "paths: {}\npaths: {}\n",
		"comma in an unquoted flow value": `
components:
  schemas:
    Thing: { type: object, properties: { n: { type: integer, description: Counted, retries included. } } }`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := assembleMap(t, map[string]string{"00-base.yaml": testBase, "10-a.yaml": frag})
			if err == nil {
				t.Fatal("assembled")
			}
			t.Log(err)
		})
	}
}

func TestHandlerServesTheDocument(t *testing.T) {
	app := fiber.New()
	app.Get(Path, Handler())
	resp, err := app.Test(httptest.NewRequest("GET", Path, nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	want, _ := Document()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(body) != string(want) {
		t.Errorf("%d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
}

// TestLicenseAgreesWithTheRepository: the document's info.license names the
// license of the LICENSE file at the root of the repository.
func TestLicenseAgreesWithTheRepository(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte("Apache License")) || !bytes.Contains(text, []byte("Version 2.0, January 2004")) {
		t.Fatalf("LICENSE is not the Apache License 2.0: update this test and info.license together")
	}
	b, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info struct {
			License struct{ Name, Identifier, URL string } `json:"license"`
		} `json:"info"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if l := doc.Info.License; l.Identifier != "Apache-2.0" || l.URL != "" {
		t.Errorf("info.license = %+v, want identifier Apache-2.0 (and no url: 3.1 allows one or the other)", l)
	}
}
