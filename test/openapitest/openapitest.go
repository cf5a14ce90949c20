// Package openapitest checks real HTTP exchanges against the published
// OpenAPI document (adapters/http/openapi), so that the document and the
// code cannot drift apart.
//
// Install it from TestMain of an end-to-end package:
//
//	func TestMain(m *testing.M) {
//		openapitest.Install()
//		pgtest.Main(m)
//	}
//
// Every exchange made through apptest then fails its test when:
//   - the path and method are not in the document, unless the answer is the
//     error envelope of an unknown route (404), a wrong method (405, with an
//     Allow header listing only documented methods) or an authentication
//     or rate-limit refusal made before routing;
//   - the status code is not declared for the operation (the standard
//     errors of its kind are declared for every operation by the document's
//     conventions);
//   - the body does not match the declared schema: a missing required
//     member, a wrong type or bound, an enum value the document does not
//     list, or a member the document does not declare (see below);
//   - a declared required header (X-Request-Id, X-RateLimit-*, Retry-After)
//     is missing or malformed;
//   - an error envelope's requestId differs from the X-Request-Id header;
//   - the server accepted (2xx) a request the document says is invalid: a
//     body member, bound or query parameter the document does not allow.
//
// Response members the document does not declare fail the check although
// the published document leaves response objects open (spec 9.2: clients
// tolerate new members): the harness validates against a closed view of the
// document in which every object schema with declared properties and no
// explicit additionalProperties is closed. Free-form objects say so with
// additionalProperties: true and stay open.
package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/qms-dev/qms/adapters/http/openapi"
	"github.com/qms-dev/qms/test/apptest"
)

// Harness validates exchanges against one document. It is safe for
// concurrent use: libopenapi renders schemas lazily and not safely from
// several goroutines, so validations take turns.
type Harness struct {
	mu        sync.Mutex
	model     *v3.Document
	validator validator.Validator
	options   *config.ValidationOptions
	schemas   schema_validation.SchemaValidator
	// Error envelopes of answers no operation declares (404, 405, ...).
	offDocument map[int]*base.Schema
}

var (
	loadOnce sync.Once
	loaded   *Harness
	loadErr  error
)

// Load returns the harness for the embedded document, built once.
func Load() (*Harness, error) {
	loadOnce.Do(func() {
		doc, err := openapi.Document()
		if err != nil {
			loadErr = err
			return
		}
		loaded, loadErr = New(doc)
	})
	return loaded, loadErr
}

// MustLoad is Load for TestMain: it panics when the document does not load.
func MustLoad() *Harness {
	h, err := Load()
	if err != nil {
		panic(fmt.Sprintf("openapitest: %v", err))
	}
	return h
}

// Install makes apptest check every exchange against the document.
func Install() {
	h := MustLoad()
	apptest.Check = h.Check
}

// New builds a harness for a document (JSON or YAML).
func New(document []byte) (*Harness, error) {
	closed, err := closedView(document)
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(closed)
	if err != nil {
		return nil, fmt.Errorf("parse the document: %w", err)
	}
	model, errs := doc.BuildV3Model()
	if errs != nil {
		return nil, fmt.Errorf("build the document model: %w", errs)
	}
	opts := []config.Option{config.WithFormatAssertions()}
	v, verrs := validator.NewValidator(doc, opts...)
	if len(verrs) > 0 {
		return nil, fmt.Errorf("build the validator: %v", verrs)
	}
	if ok, derrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("the document is not valid OpenAPI 3.1:\n%s", formatErrors(derrs))
	}
	h := &Harness{
		model:       &model.Model,
		validator:   v,
		options:     config.NewValidationOptions(opts...),
		schemas:     schema_validation.NewSchemaValidator(opts...),
		offDocument: map[int]*base.Schema{},
	}
	for status, name := range map[int]string{
		http.StatusUnauthorized:                "UnauthorizedError",
		http.StatusPaymentRequired:             "PaymentRequiredError",
		http.StatusNotFound:                    "NotFoundError",
		http.StatusMethodNotAllowed:            "MethodNotAllowedError",
		http.StatusRequestEntityTooLarge:       "PayloadTooLargeError",
		http.StatusRequestHeaderFieldsTooLarge: "HeadersTooLargeError",
		http.StatusTooManyRequests:             "RateLimitedError",
	} {
		proxy, ok := model.Model.Components.Schemas.Get(name)
		if !ok {
			return nil, fmt.Errorf("the document has no components.schemas.%s", name)
		}
		h.offDocument[status] = proxy.Schema()
	}
	return h, nil
}

// Check is apptest.Check: it fails t (with Errorf, so it may run on any
// goroutine) when the exchange does not match the document.
func (h *Harness) Check(t testing.TB, req *http.Request, resp *apptest.Response) {
	t.Helper()
	if problems := h.Problems(req, resp.Status, resp.Header, resp.Body); len(problems) > 0 {
		body := resp.Body
		if len(body) > 2000 {
			body = append(body[:2000:2000], "..."...)
		}
		t.Errorf("openapi: %s %s answered %d, which the document does not allow:\n  - %s\n  body: %s",
			req.Method, req.URL.RequestURI(), resp.Status, strings.Join(problems, "\n  - "), body)
	}
}

// Documented reports whether the document covers the request's path (of
// the API; /healthz and /readyz included).
func documented(path string) bool {
	return strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/admin/") ||
		path == "/healthz" || path == "/readyz"
}

// Problems lists how an exchange departs from the document; none means it
// conforms. req's body is read through req.GetBody, so the caller's request
// is left as it is.
func (h *Harness) Problems(req *http.Request, status int, header http.Header, body []byte) []string {
	if !documented(req.URL.Path) {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var problems []string
	reqID := header.Get("X-Request-Id")
	if reqID == "" {
		problems = append(problems, "no X-Request-Id header")
	}
	// /readyz's 503 has a body of its own, not the error envelope.
	if status >= 400 && req.URL.Path != "/readyz" {
		var env struct {
			Error struct {
				RequestID string `json:"requestId"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &env); err == nil && env.Error.RequestID != reqID {
			problems = append(problems, fmt.Sprintf("error.requestId %q differs from X-Request-Id %q", env.Error.RequestID, reqID))
		}
	}

	r, err := replay(req)
	if err != nil {
		return append(problems, err.Error())
	}
	pathItem, errs, pathValue := paths.FindPath(r, h.model, h.options)
	switch {
	case pathItem == nil:
		// Not a documented path: only refusals that come before routing, or
		// the unknown-route 404, may answer it.
		return append(problems, h.offDocumentProblems(r, status, header, body, http.StatusNotFound)...)
	case len(errs) > 0:
		// A documented path under an undocumented method.
		problems = append(problems, h.offDocumentProblems(r, status, header, body, http.StatusMethodNotAllowed)...)
		if status == http.StatusMethodNotAllowed {
			problems = append(problems, allowProblems(pathItem, header.Get("Allow"))...)
		}
		return problems
	}

	if status >= 200 && status < 300 {
		// The server took the request: the document must allow it too.
		if ok, rerrs := h.validator.ValidateHttpRequestSyncWithPathItem(r, pathItem, pathValue); !ok {
			problems = append(problems, "the server accepted a request the document refuses: "+formatErrors(rerrs))
		}
	}
	r, _ = replay(req)
	httpResp := &http.Response{
		StatusCode: status,
		Header:     header,
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    r,
	}
	if ok, rerrs := h.validator.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(r, httpResp, pathItem, pathValue); !ok {
		problems = append(problems, formatErrors(rerrs))
	}
	return problems
}

// offDocumentProblems checks an answer to a request no operation covers:
// it must be an error envelope of one of the statuses that can precede
// routing, or want (404 or 405).
func (h *Harness) offDocumentProblems(r *http.Request, status int, header http.Header, body []byte, want int) []string {
	allowed := []int{want, http.StatusUnauthorized, http.StatusPaymentRequired,
		http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge, http.StatusTooManyRequests}
	if !slices.Contains(allowed, status) {
		return []string{fmt.Sprintf("%s %s is not in the document, yet the server answered %d (want %d, or a refusal before routing)",
			r.Method, r.URL.Path, status, want)}
	}
	if ok, errs := h.schemas.ValidateSchemaBytes(h.offDocument[status], body); !ok {
		return []string{"the body is not the error envelope of a " + fmt.Sprint(status) + ": " + formatErrors(errs)}
	}
	return nil
}

// allowProblems checks that a 405's Allow header lists only methods the
// document has for the path (HEAD comes with GET).
func allowProblems(item *v3.PathItem, allow string) []string {
	if allow == "" {
		return []string{"405 without an Allow header"}
	}
	ops := item.GetOperations()
	var problems []string
	for _, m := range strings.Split(allow, ",") {
		m = strings.ToLower(strings.TrimSpace(m))
		if _, ok := ops.Get(m); ok || (m == "head" && hasGet(item)) {
			continue
		}
		problems = append(problems, fmt.Sprintf("Allow lists %s, which the document does not have for this path", strings.ToUpper(m)))
	}
	return problems
}

func hasGet(item *v3.PathItem) bool { return item.Get != nil }

// replay copies the request with a fresh body.
func replay(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("openapitest: re-read the request body: %w", err)
		}
		r.Body = b
	} else {
		r.Body = http.NoBody
	}
	return r, nil
}

// RequestProblems is the document's verdict on a request that was never
// sent: the reasons it refuses it, none when it accepts it. Tests use it to
// show that a bound the server enforces is published in the document too.
// The request is made with an X-API-Key header.
func (h *Harness) RequestProblems(method, path string, body any) []string {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if s, ok := body.(string); ok {
			b, err = []byte(s), nil
		}
		if err != nil {
			return []string{err.Error()}
		}
		rd = bytes.NewReader(b)
	}
	r, err := http.NewRequest(method, "http://qms.test"+path, rd)
	if err != nil {
		return []string{err.Error()}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Header.Set("X-API-Key", "qms_test")
	r.Header.Set("Authorization", "Bearer test")
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if ok, errs := h.validator.ValidateHttpRequestSync(r); !ok {
		return []string{formatErrors(errs)}
	}
	return nil
}

func formatErrors(errs []*liberrors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			b.WriteString(": " + e.Reason)
		}
		for _, f := range e.SchemaValidationErrors {
			where := f.FieldPath
			if where == "" {
				where = "/" + strings.Join(f.InstancePath, "/")
			}
			fmt.Fprintf(&b, " [%s: %s (%s)]", where, f.Reason, f.KeywordLocation)
		}
	}
	return b.String()
}

// Operation is one operation of the document.
type Operation struct {
	Method     string   // GET, POST, ...
	Path       string   // the template, /api/v1/queues/{queueId}
	PathParams []string // the template's parameter names, in order
	// Scope is the one scope an API-key operation requires; empty for
	// operations without a key (admin, public).
	Scope string
}

var templateParam = regexp.MustCompile(`\{([^{}]+)\}`)

// Operations lists the document's operations, by path then method.
func (h *Harness) Operations() []Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ops []Operation
	for path, item := range h.model.Paths.PathItems.FromOldest() {
		var params []string
		for _, m := range templateParam.FindAllStringSubmatch(path, -1) {
			params = append(params, m[1])
		}
		for method, op := range item.GetOperations().FromOldest() {
			o := Operation{Method: strings.ToUpper(method), Path: path, PathParams: params}
			for _, req := range op.Security {
				if req == nil || req.Requirements == nil {
					continue
				}
				if scopes, ok := req.Requirements.Get("apiKey"); ok && len(scopes) == 1 {
					o.Scope = scopes[0]
				}
			}
			ops = append(ops, o)
		}
	}
	slices.SortFunc(ops, func(a, b Operation) int {
		return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method)
	})
	return ops
}
