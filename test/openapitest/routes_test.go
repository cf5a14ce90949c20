package openapitest_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/http/openapi"
	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/bootstrap"
	"github.com/qms-dev/qms/configs/config"
)

// startApp starts a whole qms process in memory mode, with every module
// of bootstrap.Modules, and returns its server.
func startApp(t *testing.T) *server.Server {
	t.Helper()
	cfg, err := config.Load("", []string{
		"QMS_STORAGE=memory", "QMS_HTTP_ADDR=127.0.0.1:0",
		"QMS_ADMIN_TOKEN=openapitest-admin-token-0123456789",
		"QMS_LOG_LEVEL=warn",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.BootstrapDemo = false
	app, srv := bootstrap.New(cfg, bootstrap.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Stdout: io.Discard,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = app.Stop(ctx)
	})
	return srv
}

var (
	fiberParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	docParam   = regexp.MustCompile(`\{[^{}]+\}`)
)

// documentedPrefixes are the parts of the URL space the document must
// describe completely; a route elsewhere (/metrics, ...) need not be in it,
// but a documented path anywhere must be served.
var documentedPrefixes = []string{"/api/", "/admin/"}

// TestDocumentListsExactlyTheServedRoutes compares the routes of a running
// application with the document, both ways: a route under /api/v1 or
// /admin/v1 that the document lacks, and a documented operation that
// nothing serves, both fail. Path parameter names must agree too
// (/queues/:queueId is /queues/{queueId}).
func TestDocumentListsExactlyTheServedRoutes(t *testing.T) {
	srv := startApp(t)
	served := map[string]bool{}
	for _, r := range srv.App.GetRoutes(true) {
		if r.Method == http.MethodHead || r.Method == http.MethodOptions || r.Method == http.MethodConnect || r.Method == http.MethodTrace {
			continue
		}
		if strings.ContainsAny(r.Path, "*+") {
			t.Errorf("%s %s: wildcard routes cannot be documented as OpenAPI paths", r.Method, r.Path)
			continue
		}
		served[r.Method+" "+fiberParam.ReplaceAllString(r.Path, "{$1}")] = true
	}

	doc, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for p, item := range d.Paths {
		for m := range item {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented[strings.ToUpper(m)+" "+p] = true
			}
		}
	}

	var missing, unserved []string
	for r := range served {
		_, p, _ := strings.Cut(r, " ")
		inScope := slices.ContainsFunc(documentedPrefixes, func(pre string) bool { return strings.HasPrefix(p, pre) })
		if inScope && !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			unserved = append(unserved, r)
		}
	}
	// A route and an operation that differ only in parameter names are
	// one mismatch, named as such.
	shape := func(r string) string { return docParam.ReplaceAllString(r, "{}") }
	var renamed []string
	for i := 0; i < len(missing); i++ {
		for j, u := range unserved {
			if shape(missing[i]) == shape(u) {
				renamed = append(renamed, missing[i]+" is documented as "+u)
				missing = slices.Delete(missing, i, i+1)
				unserved = slices.Delete(unserved, j, j+1)
				i--
				break
			}
		}
	}
	slices.Sort(missing)
	slices.Sort(unserved)
	slices.Sort(renamed)
	if len(renamed) > 0 {
		t.Errorf("path parameter names differ between routes and document:\n  %s", strings.Join(renamed, "\n  "))
	}
	if len(missing) > 0 {
		t.Errorf("the application serves %d routes the document lacks; add them to the module's fragment in adapters/http/openapi/spec (docs/openapi.md):\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
	if len(unserved) > 0 {
		t.Errorf("the document has %d operations nothing serves:\n  %s", len(unserved), strings.Join(unserved, "\n  "))
	}
	if len(served) == 0 || len(documented) == 0 {
		t.Fatalf("nothing to compare: %d routes, %d operations", len(served), len(documented))
	}
}

// TestServedDocumentIsTheAssembledOne fetches the document over HTTP
// without a key.
func TestServedDocumentIsTheAssembledOne(t *testing.T) {
	srv := startApp(t)
	resp, err := http.Get("http://" + srv.Addr + openapi.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want, _ := openapi.Document()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if string(body) != string(want) {
		t.Error("the served document differs from openapi.Document()")
	}
	if resp.Header.Get("X-RateLimit-Limit") == "" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("headers: %v", resp.Header)
	}
}
