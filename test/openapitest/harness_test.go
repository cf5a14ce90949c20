package openapitest

import (
	"net/http"
	"strings"
	"testing"
)

func load(t *testing.T) *Harness {
	t.Helper()
	h, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func apiHeader(id string) http.Header {
	return http.Header{
		"Content-Type":          {"application/json"},
		"X-Request-Id":          {id},
		"X-Ratelimit-Limit":     {"120"},
		"X-Ratelimit-Remaining": {"119"},
		"X-Ratelimit-Reset":     {"1780000000"},
	}
}

const entity = `{"id":"ent_01jaaaaaaaaaaaaaaaaaaaaaaa","name":"Centro","description":null,"websiteUrl":null,
"supportEmail":null,"supportPhone":null,"location":null,"createdAt":"2026-01-02T03:04:05.123Z","updatedAt":"2026-01-02T03:04:05.123Z"}`

func get(path string) *http.Request {
	r, _ := http.NewRequest("GET", "http://qms.test"+path, nil)
	r.Header.Set("X-API-Key", "qms_x")
	return r
}

func post(path, body string) *http.Request {
	r, _ := http.NewRequest("POST", "http://qms.test"+path, strings.NewReader(body))
	r.Header.Set("X-API-Key", "qms_x")
	r.Header.Set("Content-Type", "application/json")
	return r
}

func TestHarnessAcceptsConformingExchanges(t *testing.T) {
	h := load(t)
	for name, c := range map[string]struct {
		req    *http.Request
		status int
		header http.Header
		body   string
	}{
		"list":           {get("/api/v1/entities?limit=7"), 200, apiHeader("req_1"), `{"data":[` + entity + `],"pagination":{"nextCursor":null,"limit":7}}`},
		"create":         {post("/api/v1/entities", `{"name":"Centro"}`), 201, apiHeader("req_1"), entity},
		"validation 400": {post("/api/v1/entities", `{"name":1}`), 400, apiHeader("req_1"), `{"error":{"code":"VALIDATION_ERROR","message":"x","details":{"fields":[{"path":"name","rule":"type","message":"m"}]},"requestId":"req_1"}}`},
		"401": {get("/api/v1/entities"), 401, apiHeader("req_1"),
			`{"error":{"code":"UNAUTHORIZED","message":"missing X-API-Key","details":{},"requestId":"req_1"}}`},
		"admin 401 with its failure budget": {get("/admin/v1/accounts/acc_1"), 401, apiHeader("req_1"),
			`{"error":{"code":"UNAUTHORIZED","message":"m","details":{},"requestId":"req_1"}}`},
		"admin 429": {get("/admin/v1/accounts/acc_1"), 429, func() http.Header { h := apiHeader("req_1"); h.Set("Retry-After", "42"); return h }(),
			`{"error":{"code":"RATE_LIMITED","message":"m","details":{"limit":10,"retryAfter":42,"reset":1780000000},"requestId":"req_1"}}`},
		"unknown route": {get("/api/v1/nope"), 404, apiHeader("req_1"), `{"error":{"code":"NOT_FOUND","message":"no route","details":{},"requestId":"req_1"}}`},
		"wrong method": {post("/api/v1/queues/que_1", ""), 405, func() http.Header { h := apiHeader("req_1"); h.Set("Allow", "GET, HEAD"); return h }(),
			`{"error":{"code":"METHOD_NOT_ALLOWED","message":"m","details":{"allowed":["GET","HEAD"]},"requestId":"req_1"}}`},
		"not an API path": {get("/favicon.ico"), 200, http.Header{}, `whatever`},
	} {
		t.Run(name, func(t *testing.T) {
			if p := h.Problems(c.req, c.status, c.header, []byte(c.body)); len(p) > 0 {
				t.Errorf("problems: %v", p)
			}
		})
	}
}

func TestHarnessRefusesDrift(t *testing.T) {
	h := load(t)
	missing := strings.Replace(entity, `"supportPhone":null,`, "", 1)
	extra := strings.Replace(entity, `"name":"Centro",`, `"name":"Centro","colour":"red",`, 1)
	noRate := apiHeader("req_1")
	noRate.Del("X-Ratelimit-Remaining")
	for name, c := range map[string]struct {
		req    *http.Request
		status int
		header http.Header
		body   string
		want   string
	}{
		"undeclared status":   {post("/api/v1/entities", `{"name":"Centro"}`), 200, apiHeader("req_1"), entity, "200"},
		"missing member":      {post("/api/v1/entities", `{"name":"Centro"}`), 201, apiHeader("req_1"), missing, "supportPhone"},
		"undeclared member":   {post("/api/v1/entities", `{"name":"Centro"}`), 201, apiHeader("req_1"), extra, "colour"},
		"wrong type":          {post("/api/v1/entities", `{"name":"Centro"}`), 201, apiHeader("req_1"), strings.Replace(entity, `"Centro"`, `7`, 1), "name"},
		"missing rate header": {post("/api/v1/entities", `{"name":"Centro"}`), 201, noRate, entity, "X-RateLimit-Remaining"},
		"401 without rate headers": {get("/api/v1/entities"), 401, http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}},
			`{"error":{"code":"UNAUTHORIZED","message":"m","details":{},"requestId":"req_1"}}`, "X-RateLimit-Limit"},
		"unknown 401 code": {get("/api/v1/entities"), 401, apiHeader("req_1"),
			`{"error":{"code":"EXPIRED_KEY","message":"m","details":{},"requestId":"req_1"}}`, "code"},
		"request id mismatch":          {get("/api/v1/entities"), 403, apiHeader("req_1"), `{"error":{"code":"FORBIDDEN","message":"m","details":{"resource":"entity"},"requestId":"req_2"}}`, "requestId"},
		"leaky forbidden":              {get("/api/v1/entities"), 403, apiHeader("req_1"), `{"error":{"code":"FORBIDDEN","message":"m","details":{"resource":"entity","name":"Centro"},"requestId":"req_1"}}`, "403"},
		"scope not named":              {get("/api/v1/entities"), 403, apiHeader("req_1"), `{"error":{"code":"INSUFFICIENT_SCOPE","message":"m","details":{},"requestId":"req_1"}}`, "requiredScope"},
		"validation w/o fields":        {post("/api/v1/entities", `{}`), 400, apiHeader("req_1"), `{"error":{"code":"VALIDATION_ERROR","message":"m","details":{},"requestId":"req_1"}}`, "fields"},
		"accepted invalid body":        {post("/api/v1/entities", `{"name":"C"}`), 201, apiHeader("req_1"), entity, "accepted"},
		"accepted unknown body member": {post("/api/v1/entities", `{"name":"Centro","x":1}`), 201, apiHeader("req_1"), entity, "accepted"},
		"undocumented path answered":   {get("/api/v1/nope"), 200, apiHeader("req_1"), `{}`, "not in the document"},
		"405 allowing too much": {post("/api/v1/queues/que_1", ""), 405, func() http.Header { h := apiHeader("req_1"); h.Set("Allow", "GET, DELETE"); return h }(),
			`{"error":{"code":"METHOD_NOT_ALLOWED","message":"m","details":{"allowed":["GET","DELETE"]},"requestId":"req_1"}}`, "DELETE"},
		"no envelope": {get("/api/v1/nope"), 404, apiHeader("req_1"), `not found`, "envelope"},
	} {
		t.Run(name, func(t *testing.T) {
			p := h.Problems(c.req, c.status, c.header, []byte(c.body))
			if len(p) == 0 {
				t.Fatal("no problem found")
			}
			if all := strings.Join(p, "\n"); !strings.Contains(all, c.want) {
				t.Errorf("problems do not mention %q:\n%s", c.want, all)
			}
		})
	}
}

func TestRequestProblems(t *testing.T) {
	h := load(t)
	if p := h.RequestProblems("POST", "/api/v1/entities", map[string]any{"name": "Centro"}); len(p) > 0 {
		t.Errorf("valid body refused: %v", p)
	}
	if p := h.RequestProblems("POST", "/api/v1/entities", map[string]any{"name": "C"}); len(p) == 0 {
		t.Error("a 1-character name is accepted by the document")
	}
}
