package e2e

// The platform every endpoint stands on (issue 2, sections 2 and 4),
// exercised through a real process and port: the error envelope and its
// classes, strict bodies, authentication, plans and scopes, foreign
// resources, pagination, rate limits, and branches and queues end to end.
// TestMain checks every exchange against the OpenAPI document as well.

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/openapitest"
)

// ---- helpers (prefixed pf, for platform, to stay clear of other files) ----

// pfUnlimited lifts the rate limit for tests that make many requests.
var pfUnlimited = apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 })

func pfMemory(t *testing.T, opts ...apptest.Option) *apptest.App {
	t.Helper()
	return apptest.Memory(t, append([]apptest.Option{pfUnlimited}, opts...)...)
}

type pfEnvelope struct {
	Error struct {
		Code      string         `json:"code"`
		Message   string         `json:"message"`
		Details   map[string]any `json:"details"`
		RequestID string         `json:"requestId"`
	} `json:"error"`
}

type pfField struct {
	Path, Rule, Message string
}

// pfErr asserts an error answer and returns its envelope.
func pfErr(t *testing.T, r *apptest.Response, status int, code string) pfEnvelope {
	t.Helper()
	var env pfEnvelope
	_ = json.Unmarshal(r.Body, &env)
	if r.Status != status || env.Error.Code != code {
		t.Fatalf("want %d %s, got %d: %s", status, code, r.Status, r.Body)
	}
	if env.Error.RequestID == "" || env.Error.RequestID != r.Header.Get("X-Request-Id") {
		t.Errorf("requestId %q, X-Request-Id %q", env.Error.RequestID, r.Header.Get("X-Request-Id"))
	}
	if env.Error.Details == nil {
		t.Errorf("details is not an object: %s", r.Body)
	}
	return env
}

// pfFields asserts a VALIDATION_ERROR and returns its fields.
func pfFields(t *testing.T, r *apptest.Response) []pfField {
	t.Helper()
	env := pfErr(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	raw, _ := json.Marshal(env.Error.Details["fields"])
	var fields []pfField
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) == 0 {
		t.Fatalf("details.fields: %s", r.Body)
	}
	return fields
}

// pfWantFields asserts a VALIDATION_ERROR naming each path with its rule
// ("path rule" pairs).
func pfWantFields(t *testing.T, r *apptest.Response, want ...string) {
	t.Helper()
	fields := pfFields(t, r)
	for _, w := range want {
		path, rule, _ := strings.Cut(w, " ")
		if !slices.ContainsFunc(fields, func(f pfField) bool { return f.Path == path && f.Rule == rule }) {
			t.Errorf("no field %q with rule %q in %s", path, rule, r.Body)
		}
	}
}

func pfRateHeaders(t *testing.T, r *apptest.Response) {
	t.Helper()
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if _, err := strconv.ParseInt(r.Header.Get(h), 10, 64); err != nil {
			t.Errorf("%d answer without %s (%q)", r.Status, h, r.Header.Get(h))
		}
	}
}

func pfEntity(t *testing.T, a *apptest.App, name string) string {
	t.Helper()
	var e struct{ ID string }
	a.API(http.MethodPost, "/entities", map[string]any{"name": name}).Must(http.StatusCreated, &e)
	return e.ID
}

type pfQueue struct {
	ID       string
	EntityID string
	Stations []struct{ ID, Label string }
	Runs     []pfRun
}

type pfRun struct {
	ID         string
	QueueID    string
	Status     string
	IntakeOpen bool
	OpenedAt   *time.Time
	ClosedAt   *time.Time
	UpdatedAt  time.Time
}

func pfQueueIn(t *testing.T, a *apptest.App, entityID string, extra map[string]any) pfQueue {
	t.Helper()
	body := map[string]any{"entityId": entityID, "name": "Caja", "type": "TURN"}
	maps.Copy(body, extra)
	var q pfQueue
	a.API(http.MethodPost, "/queues", body).Must(http.StatusCreated, &q)
	return q
}

// pfSubset fails when want is not contained in got: every member of a
// want object is in got with a contained value, arrays item by item.
func pfSubset(t *testing.T, path string, got, want any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: want an object, got %v", path, got)
			return
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				t.Errorf("%s.%s: missing", path, k)
				continue
			}
			pfSubset(t, path+"."+k, gv, v)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: want %d items, got %v", path, len(w), got)
			return
		}
		for i := range w {
			pfSubset(t, fmt.Sprintf("%s[%d]", path, i), g[i], w[i])
		}
	default:
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
}

// pfSameTime compares timestamps at the precision Postgres keeps
// (microseconds): a create or change answers the time it computed, a later
// read the time stored.
func pfSameTime(a, b time.Time) bool {
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

// pfDropTimes removes the timestamp members of a decoded body, for
// comparing an answer with a later read of the same resource.
func pfDropTimes(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if k == "createdAt" || k == "updatedAt" || k == "openedAt" || k == "closedAt" {
				continue
			}
			out[k] = pfDropTimes(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = pfDropTimes(e)
		}
		return out
	}
	return v
}

// pfJSON round-trips v through JSON, so Go literals compare with decoded
// bodies (numbers as float64).
func pfJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// ---- the error envelope, every class ----

func TestErrorClassesUseTheEnvelope(t *testing.T) {
	a := pfMemory(t)

	t.Run("404 unknown route", func(t *testing.T) {
		env := pfErr(t, a.API(http.MethodGet, "/nowhere", nil), 404, "NOT_FOUND")
		if !strings.Contains(env.Error.Message, "/api/v1/nowhere") {
			t.Errorf("message %q", env.Error.Message)
		}
		pfErr(t, a.Do(http.MethodGet, "/nowhere", nil, nil), 404, "NOT_FOUND")
	})
	t.Run("404 unknown resource", func(t *testing.T) {
		env := pfErr(t, a.API(http.MethodGet, "/queues/que_00000000000000000000000000", nil), 404, "NOT_FOUND")
		if env.Error.Details["resource"] != "queue" {
			t.Errorf("details %v", env.Error.Details)
		}
	})
	t.Run("405 wrong method", func(t *testing.T) {
		r := a.API(http.MethodDelete, "/entities", nil)
		env := pfErr(t, r, 405, "METHOD_NOT_ALLOWED")
		allow := r.Header.Get("Allow")
		if !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
			t.Errorf("Allow %q", allow)
		}
		if allowed, _ := env.Error.Details["allowed"].([]any); len(allowed) == 0 {
			t.Errorf("details %v", env.Error.Details)
		}
		pfRateHeaders(t, r)
	})
	t.Run("a well-formed X-Request-Id is kept", func(t *testing.T) {
		r := a.Do(http.MethodGet, "/api/v1/nowhere", nil, map[string]string{"X-API-Key": a.Key, "X-Request-Id": "client-trace.42:a_b"})
		if env := pfErr(t, r, 404, "NOT_FOUND"); env.Error.RequestID != "client-trace.42:a_b" {
			t.Errorf("requestId %q", env.Error.RequestID)
		}
		r = a.Do(http.MethodGet, "/api/v1/nowhere", nil, map[string]string{"X-API-Key": a.Key, "X-Request-Id": "bad id!"})
		if env := pfErr(t, r, 404, "NOT_FOUND"); !strings.HasPrefix(env.Error.RequestID, "req_") {
			t.Errorf("a malformed id was kept: %q", env.Error.RequestID)
		}
	})
	t.Run("413 oversized body", func(t *testing.T) {
		// The default limit, 1 MiB: the server answers as soon as it reads
		// the Content-Length, so the body is announced and never sent (a
		// client still writing it would see the connection reset).
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(a.BaseURL, "http://"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "POST /api/v1/entities HTTP/1.1\r\nHost: qms.test\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", a.Key, 1<<20+1)
		raw, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Body.Close()
		body, _ := io.ReadAll(raw.Body)
		resp := &apptest.Response{T: t, Status: raw.StatusCode, Header: raw.Header, Body: body}
		req, _ := http.NewRequest(http.MethodPost, a.BaseURL+"/api/v1/entities", nil)
		req.Header.Set("X-API-Key", a.Key)
		apptest.Check(t, req, resp)
		env := pfErr(t, resp, 413, "PAYLOAD_TOO_LARGE")
		if env.Error.Details["limit"] != float64(1<<20) {
			t.Errorf("details %v", env.Error.Details)
		}

		// A configured limit, through the ordinary client.
		small := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.HTTP.BodyLimitBytes = 512 }))
		env = pfErr(t, small.API(http.MethodPost, "/entities", `{"name":"`+strings.Repeat("x", 600)+`"}`), 413, "PAYLOAD_TOO_LARGE")
		if env.Error.Details["limit"] != 512.0 {
			t.Errorf("details %v", env.Error.Details)
		}
		small.API(http.MethodPost, "/entities", `{"name":"Centro"}`).Must(http.StatusCreated, nil)
	})
	t.Run("415 not JSON", func(t *testing.T) {
		r := a.Do(http.MethodPost, "/api/v1/entities", "name=x", map[string]string{"X-API-Key": a.Key, "Content-Type": "application/x-www-form-urlencoded"})
		pfErr(t, r, 415, "UNSUPPORTED_MEDIA_TYPE")
	})
}

// ---- strict bodies ----

func TestStrictBodies(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Centro")
	post := func(path, body string) *apptest.Response { return a.API(http.MethodPost, path, body) }

	t.Run("malformed JSON", func(t *testing.T) {
		pfWantFields(t, post("/entities", `{"name":`), " malformed_json")
		pfWantFields(t, post("/entities", `{"name" "x"}`), " malformed_json")
	})
	t.Run("trailing data", func(t *testing.T) {
		pfWantFields(t, post("/entities", `{"name":"Centro"}{}`), " trailing_data")
		pfWantFields(t, post("/entities", `{"name":"Centro"} 1`), " trailing_data")
	})
	t.Run("duplicate key", func(t *testing.T) {
		pfWantFields(t, post("/entities", `{"name":"Centro","name":"Otro"}`), "name duplicate_field")
		pfWantFields(t, post("/queues", `{"entityId":"`+ent+`","name":"Caja","type":"TURN","location":{"lat":1,"lat":2,"lng":1,"shortAddress":"abc"}}`),
			"location.lat duplicate_field")
	})
	t.Run("unknown field at depth", func(t *testing.T) {
		pfWantFields(t, post("/entities", `{"name":"Centro","colour":"red"}`), "colour unknown_field")
		pfWantFields(t, post("/queues", `{"entityId":"`+ent+`","name":"Caja","type":"TURN","stations":[{"label":"A"},{"label":"B","colour":"red"}]}`),
			"stations[1].colour unknown_field")
		pfWantFields(t, post("/queues", `{"entityId":"`+ent+`","name":"Caja","type":"TURN","schedule":{"mode":"weekly","weekly":[{"day":1,"open":"09:00","close":"10:00","tz":"x"}]}}`),
			"schedule.weekly[0].tz unknown_field")
	})
	t.Run("names are case-sensitive", func(t *testing.T) {
		pfWantFields(t, post("/entities", `{"Name":"Centro"}`), "Name unknown_field")
	})
	t.Run("wrong type", func(t *testing.T) {
		pfWantFields(t, post("/entities", `{"name":5}`), "name type")
		pfWantFields(t, post("/queues", `{"entityId":"`+ent+`","name":"Caja","type":"TURN","capacity":{"maxTurns":"ten"}}`), "capacity.maxTurns type")
		pfWantFields(t, post("/queues", `{"entityId":"`+ent+`","name":"Caja","type":"TURN","dispatchers":1.5}`), "dispatchers type")
		pfWantFields(t, post("/queues", `{"entityId":"`+ent+`","name":"Caja","type":"TURN","stations":{}}`), "stations type")
		pfWantFields(t, a.API(http.MethodPut, "/queues/que_x/whatsapp-capture", `{"whatsappCapture":"yes"}`), "whatsappCapture type")
	})
	t.Run("missing required", func(t *testing.T) {
		pfWantFields(t, post("/queues", `{}`), "entityId required", "name required", "type required")
		pfWantFields(t, post("/queues", `{"entityId":"`+ent+`","name":"Caja","type":"TURN","location":{"lat":1},"geofence":{},"stations":[{}]}`),
			"location.lng required", "location.shortAddress required", "geofence.radiusMeters required", "stations[0].label required")
		pfWantFields(t, a.API(http.MethodPost, "/entities", nil), "name required")
	})
	t.Run("server-set fields are not taken from a body", func(t *testing.T) {
		pfWantFields(t, post("/entities", `{"name":"Centro","id":"ent_mine"}`), "id unknown_field")
		pfWantFields(t, post("/entities", `{"name":"Centro","createdAt":"2020-01-01T00:00:00Z"}`), "createdAt unknown_field")
	})
}

// TestOutOfBoundValues sends one value past each bound of spec 2.1 and 2.7
// and expects 400 naming the field's JSON path and rule; the document must
// refuse the same body, so the bound is published too. Then all of them at
// once: every failing field is listed.
func TestOutOfBoundValues(t *testing.T) {
	a := pfMemory(t)
	h := openapitest.MustLoad()
	ent := pfEntity(t, a, "Centro")
	queue := func(extra map[string]any) map[string]any {
		b := map[string]any{"entityId": ent, "name": "Caja", "type": "TURN"}
		maps.Copy(b, extra)
		return b
	}
	loc := func(k string, v any) map[string]any {
		l := map[string]any{"lat": 40.0, "lng": -3.0, "shortAddress": "Sol 1"}
		l[k] = v
		return l
	}
	question := func(k string, v any) map[string]any {
		q := map[string]any{"id": "q1", "label": "Motivo"}
		q[k] = v
		return map[string]any{"questions": []any{q}}
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	type tc struct {
		field string
		extra map[string]any
		want  string
	}
	cases := []tc{
		{"entityId", map[string]any{"entityId": long(129)}, "entityId max_length"},
		{"name short", map[string]any{"name": "C"}, "name min_length"},
		{"name long", map[string]any{"name": long(121)}, "name max_length"},
		{"type", map[string]any{"type": "BANK"}, "type oneof"},
		{"subtitle", map[string]any{"subtitle": long(161)}, "subtitle max_length"},
		{"processName", map[string]any{"processName": long(121)}, "processName max_length"},
		{"locationId", map[string]any{"locationId": ""}, "locationId min_length"},
		{"location.lat", map[string]any{"location": loc("lat", 90.5)}, "location.lat max"},
		{"location.lng", map[string]any{"location": loc("lng", -180.1)}, "location.lng min"},
		{"location.shortAddress", map[string]any{"location": loc("shortAddress", "ab")}, "location.shortAddress min_length"},
		{"location.accuracyMeters", map[string]any{"location": loc("accuracyMeters", -1)}, "location.accuracyMeters min"},
		{"location.name", map[string]any{"location": loc("name", long(121))}, "location.name max_length"},
		{"location.fullAddress", map[string]any{"location": loc("fullAddress", long(301))}, "location.fullAddress max_length"},
		{"location.timezone", map[string]any{"location": loc("timezone", long(61))}, "location.timezone max_length"},
		{"schedule.mode", map[string]any{"schedule": map[string]any{"mode": "sometimes"}}, "schedule.mode oneof"},
		{"schedule.weekly items", map[string]any{"schedule": map[string]any{"mode": "weekly", "weekly": slices.Repeat([]any{map[string]any{"day": 1, "open": "09:00", "close": "10:00"}}, 15)}}, "schedule.weekly max_items"},
		{"schedule.weekly.day", map[string]any{"schedule": map[string]any{"mode": "weekly", "weekly": []any{map[string]any{"day": 7, "open": "09:00", "close": "10:00"}}}}, "schedule.weekly[0].day max"},
		{"schedule.weekly.open", map[string]any{"schedule": map[string]any{"mode": "weekly", "weekly": []any{map[string]any{"day": 1, "open": "24:00", "close": "10:00"}}}}, "schedule.weekly[0].open time_hhmm"},
		{"schedule.opensBeforeMinutes", map[string]any{"schedule": map[string]any{"mode": "always", "opensBeforeMinutes": 1441}}, "schedule.opensBeforeMinutes max"},
		{"schedule.closesBeforeMinutes", map[string]any{"schedule": map[string]any{"mode": "always", "closesBeforeMinutes": -1}}, "schedule.closesBeforeMinutes min"},
		{"capacity.maxTurns", map[string]any{"capacity": map[string]any{"maxTurns": 0}}, "capacity.maxTurns min"},
		{"geofence.radiusMeters", map[string]any{"geofence": map[string]any{"radiusMeters": 50001}}, "geofence.radiusMeters max"},
		{"tolerance.graceMinutes", map[string]any{"tolerance": map[string]any{"graceMinutes": 121}}, "tolerance.graceMinutes max"},
		{"tolerance.maxReentries", map[string]any{"tolerance": map[string]any{"graceMinutes": 5, "maxReentries": 11}}, "tolerance.maxReentries max"},
		{"dispatchFlow.onToleranceExpired", map[string]any{"dispatchFlow": map[string]any{"onToleranceExpired": "explode"}}, "dispatchFlow.onToleranceExpired oneof"},
		{"preAttention.instructions", map[string]any{"preAttention": map[string]any{"instructions": long(501)}}, "preAttention.instructions max_length"},
		{"preAttention.questions items", map[string]any{"preAttention": map[string]any{"questions": slices.Repeat([]any{map[string]any{"id": "q", "label": "L"}}, 11)}}, "preAttention.questions max_items"},
		{"question.id", map[string]any{"preAttention": question("id", long(41))}, "preAttention.questions[0].id max_length"},
		{"question.label", map[string]any{"preAttention": question("label", "")}, "preAttention.questions[0].label min_length"},
		{"question.type", map[string]any{"preAttention": question("type", "essay")}, "preAttention.questions[0].type oneof"},
		{"question.options items", map[string]any{"preAttention": question("options", slices.Repeat([]any{"a"}, 13))}, "preAttention.questions[0].options max_items"},
		{"option string", map[string]any{"preAttention": question("options", []any{long(81)})}, "preAttention.questions[0].options[0] max_length"},
		{"option label", map[string]any{"preAttention": question("options", []any{map[string]any{"label": ""}})}, "preAttention.questions[0].options[0].label min_length"},
		{"option prefix", map[string]any{"preAttention": question("options", []any{map[string]any{"label": "a", "prefix": "ABCDE"}})}, "preAttention.questions[0].options[0].prefix max_length"},
		{"option priority", map[string]any{"preAttention": question("options", []any{map[string]any{"label": "a", "priority": "URGENT"}})}, "preAttention.questions[0].options[0].priority oneof"},
		{"stations items", map[string]any{"stations": slices.Repeat([]any{map[string]any{"label": "S"}}, 31)}, "stations max_items"},
		{"station label", map[string]any{"stations": []any{map[string]any{"label": long(41)}}}, "stations[0].label max_length"},
		{"station description", map[string]any{"stations": []any{map[string]any{"label": "S", "description": long(161)}}}, "stations[0].description max_length"},
		{"help.quickReplies items", map[string]any{"help": map[string]any{"quickReplies": slices.Repeat([]any{"r"}, 13)}}, "help.quickReplies max_items"},
		{"help.quickReplies item", map[string]any{"help": map[string]any{"quickReplies": []any{""}}}, "help.quickReplies[0] min_length"},
		{"cancellation", map[string]any{"cancellation": map[string]any{"minNoticeMinutes": 100001}}, "cancellation.minNoticeMinutes max"},
		{"carpool.intakeWindowMinutes", map[string]any{"carpool": map[string]any{"intakeWindowMinutes": 1441}}, "carpool.intakeWindowMinutes max"},
		{"arrivalBoard.columns", map[string]any{"arrivalBoard": map[string]any{"columns": slices.Repeat([]any{map[string]any{"key": "k", "label": "l"}}, 13)}}, "arrivalBoard.columns max_items"},
		{"arrivalBoard.columns.key", map[string]any{"arrivalBoard": map[string]any{"columns": []any{map[string]any{"key": long(41), "label": "l"}}}}, "arrivalBoard.columns[0].key max_length"},
		{"offers.maxPoints", map[string]any{"offers": map[string]any{"maxPoints": 100001}}, "offers.maxPoints max"},
		{"sla.maxWaitMinutes", map[string]any{"sla": map[string]any{"maxWaitMinutes": -1}}, "sla.maxWaitMinutes min"},
		{"dispatchers", map[string]any{"dispatchers": 101}, "dispatchers max"},
		{"turnPrefix", map[string]any{"turnPrefix": "ABCDE"}, "turnPrefix max_length"},
		{"turnPadding", map[string]any{"turnPadding": 9}, "turnPadding max"},
	}
	all := map[string]any{}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			body := queue(c.extra)
			pfWantFields(t, a.API(http.MethodPost, "/queues", body), c.want)
			if p := h.RequestProblems(http.MethodPost, "/api/v1/queues", body); len(p) == 0 {
				t.Errorf("the document accepts %s out of bounds", c.field)
			}
		})
		if _, seen := all[slices.Collect(maps.Keys(c.extra))[0]]; !seen {
			maps.Copy(all, c.extra)
		}
	}
	t.Run("every failing field at once", func(t *testing.T) {
		fields := pfFields(t, a.API(http.MethodPost, "/queues", queue(all)))
		if len(fields) < 20 {
			t.Errorf("%d fields listed: %v", len(fields), fields)
		}
	})

	t.Run("entities", func(t *testing.T) {
		for _, c := range []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"name": "C"}, "name min_length"},
			{map[string]any{"name": "Centro", "description": long(501)}, "description max_length"},
			{map[string]any{"name": "Centro", "websiteUrl": "not a uri"}, "websiteUrl uri"},
			{map[string]any{"name": "Centro", "websiteUrl": "https://example.com/" + long(300)}, "websiteUrl max_length"},
			{map[string]any{"name": "Centro", "supportEmail": "nobody"}, "supportEmail email"},
			{map[string]any{"name": "Centro", "supportPhone": "12345"}, "supportPhone pattern"},
			{map[string]any{"name": "Centro", "supportPhone": "+1 234 567 890 123 456 789"}, "supportPhone pattern"},
			{map[string]any{"name": "Centro", "location": loc("lat", -91)}, "location.lat min"},
		} {
			pfWantFields(t, a.API(http.MethodPost, "/entities", c.body), c.want)
			if p := h.RequestProblems(http.MethodPost, "/api/v1/entities", c.body); len(p) == 0 {
				t.Errorf("the document accepts %v", c.body)
			}
		}
		// And the bounds themselves are accepted by both.
		ok := map[string]any{"name": long(120), "description": long(500), "supportPhone": "+34 600-123-456",
			"supportEmail": "help@example.com", "websiteUrl": "https://example.com/centro", "location": loc("lat", 90)}
		a.API(http.MethodPost, "/entities", ok).Must(http.StatusCreated, nil)
	})
}

// ---- authentication, plans and scopes ----

func TestAuthentication(t *testing.T) {
	a := pfMemory(t)
	t.Run("401 missing key", func(t *testing.T) {
		pfErr(t, a.Do(http.MethodGet, "/api/v1/entities", nil, nil), 401, "UNAUTHORIZED")
	})
	t.Run("401 unknown key", func(t *testing.T) {
		pfErr(t, a.APIWith("qms_not_a_key_0000000000000000", http.MethodGet, "/entities", nil), 401, "INVALID_API_KEY")
	})
	t.Run("401 revoked key, at once", func(t *testing.T) {
		acc, key := a.NewAccount("premium", "entities:read")
		a.APIWith(key, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil) // cached as valid
		var keys struct{ Data []struct{ ID string } }
		a.Admin(http.MethodGet, "/admin/v1/accounts/"+acc+"/api-keys", nil, &keys)
		a.Admin(http.MethodPost, "/admin/v1/api-keys/"+keys.Data[0].ID+"/revoke", nil, nil)
		pfErr(t, a.APIWith(key, http.MethodGet, "/entities", nil), 401, "REVOKED_API_KEY")
	})
	t.Run("402 account not on premium, every key", func(t *testing.T) {
		acc, key1 := a.NewAccount("premium", "entities:read")
		key2 := a.NewKey(acc, "queues:write")
		a.APIWith(key1, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil)
		a.Admin(http.MethodPut, "/admin/v1/accounts/"+acc+"/plan", map[string]any{"plan": "free"}, nil)
		// The first request after the admin call's answer sees the downgrade
		// (issue 14): the plan change clears the authentication cache.
		pfErr(t, a.APIWith(key1, http.MethodGet, "/entities", nil), 402, "PREMIUM_REQUIRED")
		pfErr(t, a.APIWith(key2, http.MethodGet, "/queues", nil), 402, "PREMIUM_REQUIRED")
		// The keys were kept; back on premium they work again, at once.
		var keys struct{ Data []struct{ ID string } }
		a.Admin(http.MethodGet, "/admin/v1/accounts/"+acc+"/api-keys", nil, &keys)
		if len(keys.Data) != 2 {
			t.Fatalf("a downgrade keeps the keys: %+v", keys)
		}
		a.Admin(http.MethodPut, "/admin/v1/accounts/"+acc+"/plan", map[string]any{"plan": "premium"}, nil)
		a.APIWith(key2, http.MethodGet, "/queues", nil).Must(http.StatusOK, nil)
	})
	t.Run("402 creating a key for an account not on premium", func(t *testing.T) {
		var acc struct{ ID string }
		a.Admin(http.MethodPost, "/admin/v1/accounts", map[string]any{"name": "Free", "plan": "free"}, &acc)
		r := a.Do(http.MethodPost, "/admin/v1/accounts/"+acc.ID+"/api-keys", map[string]any{"scopes": []string{"queues:read"}},
			map[string]string{"Authorization": "Bearer " + apptest.AdminToken})
		pfErr(t, r, 402, "PREMIUM_REQUIRED")
		var keys struct{ Data []struct{ ID string } }
		a.Admin(http.MethodGet, "/admin/v1/accounts/"+acc.ID+"/api-keys", nil, &keys)
		if len(keys.Data) != 0 {
			t.Fatalf("no key may be made: %+v", keys)
		}
	})
	t.Run("admin API needs the bearer token", func(t *testing.T) {
		pfErr(t, a.Do(http.MethodPost, "/admin/v1/accounts", map[string]any{"name": "X", "plan": "premium"}, nil), 401, "UNAUTHORIZED")
		pfErr(t, a.Do(http.MethodGet, "/admin/v1/accounts/"+a.AccountID, nil, map[string]string{"Authorization": "Bearer wrong"}), 401, "UNAUTHORIZED")
		pfErr(t, a.Do(http.MethodGet, "/admin/v1/accounts/"+a.AccountID, nil, map[string]string{"X-API-Key": a.Key}), 401, "UNAUTHORIZED")
	})
	t.Run("admin API refuses unknown scopes", func(t *testing.T) {
		r := a.Do(http.MethodPost, "/admin/v1/accounts/"+a.AccountID+"/api-keys", map[string]any{"scopes": []string{"queues:read", "dispatch:read"}},
			map[string]string{"Authorization": "Bearer " + apptest.AdminToken})
		pfWantFields(t, r, "scopes[1] scope")
	})
}

func TestScopeMatrix(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Centro")
	scope := func(t *testing.T, r *apptest.Response, want string) {
		t.Helper()
		env := pfErr(t, r, 403, "INSUFFICIENT_SCOPE")
		if env.Error.Details["requiredScope"] != want || !strings.Contains(env.Error.Message, want) {
			t.Errorf("want the scope %s named: %s", want, r.Body)
		}
		pfRateHeaders(t, r)
	}
	key := func(scopes string) string { return a.NewKey(a.AccountID, scopes) }

	read := key("entities:read,queues:read")
	a.APIWith(read, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil)
	a.APIWith(read, http.MethodGet, "/queues", nil).Must(http.StatusOK, nil)
	scope(t, a.APIWith(read, http.MethodPost, "/entities", map[string]any{"name": "Centro"}), "entities:write")
	scope(t, a.APIWith(read, http.MethodPatch, "/entities/"+ent, map[string]any{"name": "Centro"}), "entities:write")
	scope(t, a.APIWith(read, http.MethodDelete, "/entities/"+ent, nil), "entities:write")
	scope(t, a.APIWith(read, http.MethodPost, "/queues", map[string]any{}), "queues:write")

	write := key("entities:write")
	a.APIWith(write, http.MethodGet, "/entities", nil).Must(http.StatusOK, nil) // write includes read
	a.APIWith(write, http.MethodPost, "/entities", map[string]any{"name": "Norte"}).Must(http.StatusCreated, nil)
	scope(t, a.APIWith(write, http.MethodGet, "/queues", nil), "queues:read") // of the same module only

	dispatch := key("dispatch:write") // write only: it reads nothing
	scope(t, a.APIWith(dispatch, http.MethodGet, "/queues", nil), "queues:read")
	scope(t, a.APIWith(dispatch, http.MethodGet, "/entities", nil), "entities:read")
}

// TestEveryOperationRequiresItsDocumentedScope walks the document: each
// API-key operation is refused, before anything else, to a key without the
// scope it names, with 403 naming exactly that scope; a key with only that
// scope gets past the check.
func TestEveryOperationRequiresItsDocumentedScope(t *testing.T) {
	a := pfMemory(t)
	doc := openapitest.MustLoad()
	ops := doc.Operations()
	if len(ops) < 10 {
		t.Fatalf("only %d operations", len(ops))
	}
	keys := map[string]string{}
	keyFor := func(scope string) string {
		if keys[scope] == "" {
			keys[scope] = a.NewKey(a.AccountID, scope)
		}
		return keys[scope]
	}
	for _, op := range ops {
		if op.Scope == "" {
			continue
		}
		path := strings.TrimPrefix(op.Path, "/api/v1")
		for _, p := range op.PathParams {
			path = strings.ReplaceAll(path, "{"+p+"}", "nope_0")
		}
		t.Run(op.Method+" "+op.Path, func(t *testing.T) {
			other := "analytics:read"
			if op.Scope == other {
				other = "webhooks:read"
			}
			r := a.APIWith(keyFor(other), op.Method, path, nil)
			env := pfErr(t, r, 403, "INSUFFICIENT_SCOPE")
			if env.Error.Details["requiredScope"] != op.Scope {
				t.Errorf("the document names %s, the server %v", op.Scope, env.Error.Details["requiredScope"])
			}
			r = a.APIWith(keyFor(op.Scope), op.Method, path, nil)
			if r.ErrorCode() == "INSUFFICIENT_SCOPE" {
				t.Errorf("a key holding %s is refused: %s", op.Scope, r.Body)
			}
		})
	}
}

// TestForeignResources: another account's resources are 403, and nothing
// of them is in the body.
func TestForeignResources(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Sucursal Secreta")
	q := pfQueueIn(t, a, ent, map[string]any{"name": "Cola Secreta", "stations": []any{map[string]any{"label": "Ventanilla Secreta"}}})
	run, station := q.Runs[0].ID, q.Stations[0].ID
	_, other := a.NewAccount("premium", "all")

	leaks := []string{ent, q.ID, run, station, "Secreta"}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPatch, "/entities/" + ent, map[string]any{"name": "Mía"}},
		{http.MethodDelete, "/entities/" + ent, nil},
		{http.MethodPost, "/queues", map[string]any{"entityId": ent, "name": "Intrusa", "type": "TURN"}},
		{http.MethodGet, "/queues/" + q.ID, nil},
		{http.MethodPut, "/queues/" + q.ID + "/sla", map[string]any{"maxWaitMinutes": 1}},
		{http.MethodPut, "/queues/" + q.ID + "/dispatch-flow", map[string]any{"allowReopen": true}},
		{http.MethodPut, "/queues/" + q.ID + "/whatsapp-capture", map[string]any{"whatsappCapture": false}},
		{http.MethodPut, "/queues/" + q.ID + "/numbering-reset", map[string]any{"resetNumberingDaily": true}},
		{http.MethodPut, "/queues/" + q.ID + "/cancellation-policy", map[string]any{"minNoticeMinutes": 5}},
		{http.MethodGet, "/queues/" + q.ID + "/stations", nil},
		{http.MethodPost, "/queues/" + q.ID + "/stations", map[string]any{"label": "Mía"}},
		{http.MethodDelete, "/stations/" + station, nil},
		{http.MethodPost, "/queue-runs/" + run + "/open", nil},
		{http.MethodPost, "/queue-runs/" + run + "/close", nil},
		{http.MethodPost, "/queue-runs/" + run + "/close-intake", nil},
		{http.MethodPost, "/queue-runs/" + run + "/open-intake", nil},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			r := a.APIWith(other, c.method, c.path, c.body)
			pfErr(t, r, 403, "FORBIDDEN")
			for _, l := range leaks {
				if strings.Contains(string(r.Body), l) {
					t.Errorf("the body leaks %q: %s", l, r.Body)
				}
			}
		})
	}
	// Nothing changed, and the owner still sees it all.
	var got pfQueue
	a.API(http.MethodGet, "/queues/"+q.ID, nil).Must(http.StatusOK, &got)
	if len(got.Stations) != 1 || got.Runs[0].Status != "OPEN" || !got.Runs[0].IntakeOpen {
		t.Errorf("the foreign calls changed the queue: %+v", got)
	}
	// A list filtered by a foreign entity shows nothing of it.
	var page struct{ Data []any }
	a.APIWith(other, http.MethodGet, "/queues?entityId="+ent, nil).Must(http.StatusOK, &page)
	if len(page.Data) != 0 {
		t.Errorf("foreign queues listed: %v", page.Data)
	}
}

// ---- entities ----

func TestEntitiesEndToEnd(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		full := map[string]any{
			"name": "Centro", "description": "Sede central", "websiteUrl": "https://example.com/centro",
			"supportEmail": "ayuda@example.com", "supportPhone": "+34 600-123-456",
			"location": map[string]any{"lat": 40.4168, "lng": -3.7038, "shortAddress": "Sol 1", "accuracyMeters": 3.5,
				"name": "Sol", "fullAddress": "Puerta del Sol 1, Madrid", "timezone": "Europe/Madrid"},
		}
		var e map[string]any
		a.API(http.MethodPost, "/entities", full).Must(http.StatusCreated, &e)
		pfSubset(t, "entity", e, pfJSON(full))
		id := e["id"].(string)
		if !strings.HasPrefix(id, "ent_") {
			t.Errorf("id %q", id)
		}

		var page struct {
			Data       []map[string]any
			Pagination struct {
				NextCursor *string
				Limit      int
			}
		}
		a.API(http.MethodGet, "/entities", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 || page.Data[0]["id"] != id || page.Pagination.Limit != 50 || page.Pagination.NextCursor != nil {
			t.Errorf("list: %+v", page)
		}

		// PATCH changes what it names, keeps the rest, and null clears.
		var p map[string]any
		a.API(http.MethodPatch, "/entities/"+id, map[string]any{"name": "Centro Sol"}).Must(http.StatusOK, &p)
		want := pfJSON(full).(map[string]any)
		want["name"] = "Centro Sol"
		pfSubset(t, "patched", p, want)
		a.API(http.MethodPatch, "/entities/"+id, `{"description":null,"websiteUrl":null,"supportEmail":null,"supportPhone":null}`).Must(http.StatusOK, &p)
		for _, k := range []string{"description", "websiteUrl", "supportEmail", "supportPhone"} {
			if v, ok := p[k]; !ok || v != nil {
				t.Errorf("%s not cleared: %v", k, p[k])
			}
		}
		if p["name"] != "Centro Sol" || p["location"] == nil {
			t.Errorf("cleared too much: %v", p)
		}
		a.API(http.MethodPatch, "/entities/"+id, map[string]any{"description": "De nuevo"}).Must(http.StatusOK, &p)
		if p["description"] != "De nuevo" {
			t.Errorf("description %v", p["description"])
		}
		pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, `{"name":null}`), "name not_null")
		pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, `{"location":null}`), "location not_null")
		pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, map[string]any{"supportEmail": "nope"}), "supportEmail email")
		var again map[string]any
		a.API(http.MethodGet, "/entities", nil).Must(http.StatusOK, &page)
		again = page.Data[0]
		pfSubset(t, "stored", again, pfDropTimes(p))

		pfErr(t, a.API(http.MethodPatch, "/entities/ent_00000000000000000000000000", map[string]any{"name": "X1"}), 404, "NOT_FOUND")
	})
}

// TestEntityPatchIsStrictAtDepth: the PATCH body's nested location is as
// strict as the create body's (issue 2, section 2: unknown properties at
// any depth, keys case-sensitive).
func TestEntityPatchIsStrictAtDepth(t *testing.T) {
	a := pfMemory(t)
	id := pfEntity(t, a, "Centro")
	pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, `{"location":{"lat":1,"lng":2,"shortAddress":"abc","colour":"red"}}`),
		"location.colour unknown_field")
	pfWantFields(t, a.API(http.MethodPatch, "/entities/"+id, `{"location":{"LAT":1,"lng":2,"shortAddress":"abc"}}`),
		"location.LAT unknown_field")
}

// TestQuestionOptionsAreStrict: an option object is a body like any other.
func TestQuestionOptionsAreStrict(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Centro")
	opts := func(o string) string {
		return `{"entityId":"` + ent + `","name":"Caja","type":"TURN","preAttention":{"questions":[{"id":"q","label":"L","type":"choice","options":[` + o + `]}]}}`
	}
	pfWantFields(t, a.API(http.MethodPost, "/queues", opts(`{"label":"a","colour":"red"}`)), "preAttention.questions[0].options[0].colour unknown_field")
	pfWantFields(t, a.API(http.MethodPost, "/queues", opts(`{"LABEL":"a"}`)), "preAttention.questions[0].options[0].LABEL unknown_field")
}

func TestDeletingAnEntityDeletesItsQueues(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		ent, keep := pfEntity(t, a, "Se va"), pfEntity(t, a, "Se queda")
		q1 := pfQueueIn(t, a, ent, map[string]any{"stations": []any{map[string]any{"label": "A"}}})
		q2 := pfQueueIn(t, a, ent, nil)
		q3 := pfQueueIn(t, a, keep, nil)
		a.API(http.MethodPost, "/queue-runs/"+q2.Runs[0].ID+"/close", nil).Must(http.StatusCreated, nil)

		var del map[string]any
		a.API(http.MethodDelete, "/entities/"+ent, nil).Must(http.StatusOK, &del)
		if del["id"] != ent || del["deleted"] != true {
			t.Errorf("delete answered %v", del)
		}
		for _, q := range []pfQueue{q1, q2} {
			pfErr(t, a.API(http.MethodGet, "/queues/"+q.ID, nil), 404, "NOT_FOUND")
			pfErr(t, a.API(http.MethodGet, "/queues/"+q.ID+"/stations", nil), 404, "NOT_FOUND")
			pfErr(t, a.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/open", nil), 404, "NOT_FOUND")
		}
		pfErr(t, a.API(http.MethodDelete, "/stations/"+q1.Stations[0].ID, nil), 404, "NOT_FOUND")
		pfErr(t, a.API(http.MethodDelete, "/entities/"+ent, nil), 404, "NOT_FOUND")
		var page struct{ Data []struct{ ID string } }
		a.API(http.MethodGet, "/queues", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 || page.Data[0].ID != q3.ID {
			t.Errorf("queues left: %+v", page.Data)
		}
		a.API(http.MethodGet, "/queues?entityId="+ent, nil).Must(http.StatusOK, &page)
		if len(page.Data) != 0 {
			t.Errorf("queues of the deleted entity: %+v", page.Data)
		}
		a.API(http.MethodGet, "/queues/"+q3.ID, nil).Must(http.StatusOK, nil)
	})
}

// ---- queues ----

func pfFullQueueBody(entityID string) map[string]any {
	return map[string]any{
		"entityId": entityID, "name": "Caja principal", "type": "HYBRID",
		"subtitle": "Planta baja", "processName": "Atención al cliente", "locationId": "loc-1",
		"location": map[string]any{"lat": 40.4168, "lng": -3.7038, "shortAddress": "Sol 1", "accuracyMeters": 5.5,
			"name": "Sol", "fullAddress": "Puerta del Sol 1, Madrid", "timezone": "Europe/Madrid"},
		"schedule": map[string]any{"mode": "weekly", "weekly": []any{
			map[string]any{"day": 1, "open": "09:00", "close": "14:00"},
			map[string]any{"day": 1, "open": "16:00", "close": "20:00"},
		}, "opensBeforeMinutes": 15, "closesBeforeMinutes": 10, "allowOutsideHours": false, "resetNumberingDaily": true},
		"capacity":     map[string]any{"maxTurns": 50},
		"geofence":     map[string]any{"radiusMeters": 300},
		"tolerance":    map[string]any{"graceMinutes": 5},
		"dispatchFlow": map[string]any{"onToleranceExpired": "hold"},
		"preAttention": map[string]any{"instructions": "Traiga su DNI", "questions": []any{
			map[string]any{"id": "motivo", "label": "Motivo", "type": "choice", "required": true,
				"options": []any{"Consulta", map[string]any{"label": "Urgente", "prefix": "U", "priority": "HIGH"}}},
			map[string]any{"id": "nota", "label": "Nota"},
		}},
		"stations":           []any{map[string]any{"label": "Caja 1", "description": "Entrada"}, map[string]any{"label": "Caja 2"}},
		"help":               map[string]any{"enabled": true, "quickReplies": []any{"¿Dónde está la caja?"}},
		"transferEnabled":    true,
		"whatsappCapture":    false,
		"accessCodeRequired": true,
		"cancellation":       map[string]any{"minNoticeMinutes": 30},
		"carpool":            map[string]any{"enabled": true, "intakeWindowMinutes": 20, "oneActiveTurnPerCode": true, "autoArriveOnGeofence": false},
		"arrivalBoard":       map[string]any{"columns": []any{map[string]any{"key": "plate", "label": "Matrícula"}}, "showSecurity": true},
		"offers":             map[string]any{"enabled": true},
		"sla":                map[string]any{"maxWaitMinutes": 20, "maxServiceMinutes": nil},
		"dispatchers":        3,
		"turnPrefix":         "A",
		"turnPadding":        3,
	}
}

func TestQueueCreateWithEveryNestedObject(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		ent := pfEntity(t, a, "Centro")
		body := pfFullQueueBody(ent)
		var q map[string]any
		a.API(http.MethodPost, "/queues", body).Must(http.StatusCreated, &q)
		pfSubset(t, "queue", q, pfJSON(body))
		// The defaults of spec 2.1 fill what the body left out.
		pfSubset(t, "queue", q, pfJSON(map[string]any{
			"capacity":     map[string]any{"maxTurns": 50, "waitlistEnabled": false, "autoPromote": true},
			"geofence":     map[string]any{"radiusMeters": 300, "requireToTake": false},
			"tolerance":    map[string]any{"graceMinutes": 5, "allowReentry": true, "maxReentries": 1},
			"dispatchFlow": map[string]any{"callOnNext": true, "trackService": true, "onToleranceExpired": "hold", "allowReopen": false},
			"offers":       map[string]any{"enabled": true, "maxPoints": 100},
		}))
		nota := q["preAttention"].(map[string]any)["questions"].([]any)[1]
		pfSubset(t, "questions[1]", nota, pfJSON(map[string]any{"type": "text", "required": false, "options": []any{}}))
		stations, runs := q["stations"].([]any), q["runs"].([]any)
		if len(stations) != 2 || len(runs) != 1 {
			t.Fatalf("stations %v, runs %v", stations, runs)
		}
		for _, s := range stations {
			if id, _ := s.(map[string]any)["id"].(string); !strings.HasPrefix(id, "sta_") {
				t.Errorf("station %v", s)
			}
		}
		pfSubset(t, "runs[0]", runs[0], map[string]any{"status": "OPEN", "intakeOpen": true, "closedAt": nil, "queueId": q["id"]})

		// Stored as created.
		var got map[string]any
		a.API(http.MethodGet, "/queues/"+q["id"].(string), nil).Must(http.StatusOK, &got)
		pfSubset(t, "stored", got, pfDropTimes(q))

		// The smallest body gets every default.
		var min map[string]any
		a.API(http.MethodPost, "/queues", map[string]any{"entityId": ent, "name": "Mínima", "type": "TURN"}).Must(http.StatusCreated, &min)
		pfSubset(t, "minimal", min, pfJSON(map[string]any{
			"subtitle": nil, "processName": nil, "locationId": nil, "location": nil, "geofence": nil,
			"cancellation": nil, "arrivalBoard": nil,
			"schedule":        map[string]any{"mode": "always", "weekly": []any{}},
			"capacity":        map[string]any{"maxTurns": nil, "waitlistEnabled": false, "autoPromote": true},
			"dispatchFlow":    map[string]any{"callOnNext": true, "trackService": true, "onToleranceExpired": "no_show", "allowReopen": false},
			"preAttention":    map[string]any{"instructions": nil, "questions": []any{}},
			"help":            map[string]any{"enabled": false, "quickReplies": []any{}},
			"carpool":         map[string]any{"enabled": false},
			"offers":          map[string]any{"enabled": false, "maxPoints": 100},
			"sla":             map[string]any{"maxWaitMinutes": nil, "maxServiceMinutes": nil},
			"transferEnabled": false, "whatsappCapture": true, "accessCodeRequired": false,
			"dispatchers": 1, "turnPrefix": "", "turnPadding": 0, "stations": []any{},
		}))

		// entityId must name an entity of the account.
		pfErr(t, a.API(http.MethodPost, "/queues", map[string]any{"entityId": "ent_00000000000000000000000000", "name": "Huérfana", "type": "TURN"}),
			422, "ENTITY_NOT_FOUND")
	})
}

func TestQueueListFiltersByEntity(t *testing.T) {
	a := pfMemory(t)
	e1, e2 := pfEntity(t, a, "Norte"), pfEntity(t, a, "Sur")
	var want1 []string
	for range 3 {
		want1 = append(want1, pfQueueIn(t, a, e1, nil).ID)
	}
	q2 := pfQueueIn(t, a, e2, nil)
	var page struct {
		Data []struct{ ID, EntityID string }
	}
	a.API(http.MethodGet, "/queues?entityId="+e1, nil).Must(http.StatusOK, &page)
	var got []string
	for _, q := range page.Data {
		got = append(got, q.ID)
	}
	if !slices.Equal(got, want1) {
		t.Errorf("entity %s: %v, want %v", e1, got, want1)
	}
	a.API(http.MethodGet, "/queues?entityId="+e2, nil).Must(http.StatusOK, &page)
	if len(page.Data) != 1 || page.Data[0].ID != q2.ID {
		t.Errorf("entity %s: %+v", e2, page.Data)
	}
	a.API(http.MethodGet, "/queues", nil).Must(http.StatusOK, &page)
	if len(page.Data) != 4 {
		t.Errorf("unfiltered: %d", len(page.Data))
	}
}

func TestQueueSettings(t *testing.T) {
	a := pfMemory(t)
	q := pfQueueIn(t, a, pfEntity(t, a, "Centro"), nil)
	put := func(setting string, body any) *apptest.Response {
		return a.API(http.MethodPut, "/queues/"+q.ID+"/"+setting, body)
	}
	var v map[string]any
	member := func(path ...string) any {
		var cur any = v
		for _, p := range path {
			cur = cur.(map[string]any)[p]
		}
		return cur
	}

	t.Run("sla", func(t *testing.T) {
		put("sla", map[string]any{"maxWaitMinutes": 30, "maxServiceMinutes": 100000}).Must(http.StatusOK, &v)
		if member("sla", "maxWaitMinutes") != 30.0 || member("sla", "maxServiceMinutes") != 100000.0 {
			t.Errorf("sla %v", v["sla"])
		}
		put("sla", map[string]any{"maxWaitMinutes": 10}).Must(http.StatusOK, &v) // a PUT replaces both
		if member("sla", "maxWaitMinutes") != 10.0 || member("sla", "maxServiceMinutes") != nil {
			t.Errorf("sla %v", v["sla"])
		}
		put("sla", `{"maxWaitMinutes":null,"maxServiceMinutes":null}`).Must(http.StatusOK, &v)
		if member("sla", "maxWaitMinutes") != nil {
			t.Errorf("sla %v", v["sla"])
		}
		pfWantFields(t, put("sla", map[string]any{"maxWaitMinutes": 100001, "maxServiceMinutes": -1}), "maxWaitMinutes max", "maxServiceMinutes min")
		pfWantFields(t, put("sla", map[string]any{"maxWait": 1}), "maxWait unknown_field")
	})
	t.Run("dispatch-flow", func(t *testing.T) {
		put("dispatch-flow", map[string]any{"allowReopen": true}).Must(http.StatusOK, &v)
		pfSubset(t, "dispatchFlow", v["dispatchFlow"], map[string]any{"allowReopen": true, "callOnNext": true, "trackService": true, "onToleranceExpired": "no_show"})
		put("dispatch-flow", map[string]any{"callOnNext": false, "onToleranceExpired": "cancel"}).Must(http.StatusOK, &v)
		pfSubset(t, "dispatchFlow", v["dispatchFlow"], map[string]any{"allowReopen": true, "callOnNext": false, "trackService": true, "onToleranceExpired": "cancel"})
		put("dispatch-flow", nil).Must(http.StatusOK, &v) // all optional
		pfWantFields(t, put("dispatch-flow", map[string]any{"onToleranceExpired": "explode"}), "onToleranceExpired oneof")
	})
	t.Run("whatsapp-capture", func(t *testing.T) {
		put("whatsapp-capture", map[string]any{"whatsappCapture": false}).Must(http.StatusOK, &v)
		if v["whatsappCapture"] != false {
			t.Errorf("whatsappCapture %v", v["whatsappCapture"])
		}
		pfWantFields(t, put("whatsapp-capture", map[string]any{}), "whatsappCapture required")
	})
	t.Run("numbering-reset", func(t *testing.T) {
		put("numbering-reset", map[string]any{"resetNumberingDaily": true}).Must(http.StatusOK, &v)
		if member("schedule", "resetNumberingDaily") != true {
			t.Errorf("schedule %v", v["schedule"])
		}
		pfWantFields(t, put("numbering-reset", map[string]any{}), "resetNumberingDaily required")
	})
	t.Run("cancellation-policy", func(t *testing.T) {
		put("cancellation-policy", map[string]any{"minNoticeMinutes": 60}).Must(http.StatusOK, &v)
		if member("cancellation", "minNoticeMinutes") != 60.0 {
			t.Errorf("cancellation %v", v["cancellation"])
		}
		put("cancellation-policy", `{"minNoticeMinutes":null}`).Must(http.StatusOK, &v)
		if v["cancellation"] != nil {
			t.Errorf("cancellation %v", v["cancellation"])
		}
		pfWantFields(t, put("cancellation-policy", map[string]any{}), "minNoticeMinutes required")
		pfWantFields(t, put("cancellation-policy", map[string]any{"minNoticeMinutes": 100001}), "minNoticeMinutes max")
	})
	t.Run("unknown queue", func(t *testing.T) {
		pfErr(t, a.API(http.MethodPut, "/queues/que_00000000000000000000000000/sla", map[string]any{}), 404, "NOT_FOUND")
	})
	// Every change is kept.
	a.API(http.MethodGet, "/queues/"+q.ID, nil).Must(http.StatusOK, &v)
	pfSubset(t, "stored", v, map[string]any{"whatsappCapture": false, "cancellation": nil,
		"dispatchFlow": map[string]any{"allowReopen": true, "callOnNext": false, "onToleranceExpired": "cancel"}})
}

func TestStations(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Centro")
	var in []any
	for i := range 29 {
		in = append(in, map[string]any{"label": fmt.Sprintf("Caja %d", i+1)})
	}
	q := pfQueueIn(t, a, ent, map[string]any{"stations": in})
	var s struct{ ID, QueueID, Label string }
	a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": "Caja 30", "description": "La última"}).Must(http.StatusCreated, &s)
	if s.QueueID != q.ID || s.Label != "Caja 30" {
		t.Errorf("station %+v", s)
	}
	env := pfErr(t, a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": "Caja 31"}), 409, "TOO_MANY_STATIONS")
	if env.Error.Details["max"] != 30.0 {
		t.Errorf("details %v", env.Error.Details)
	}
	var page struct {
		Data       []struct{ ID, Label string }
		Pagination struct{ NextCursor *string }
	}
	a.API(http.MethodGet, "/queues/"+q.ID+"/stations", nil).Must(http.StatusOK, &page)
	if len(page.Data) != 30 || page.Pagination.NextCursor != nil || page.Data[0].Label != "Caja 1" || page.Data[29].Label != "Caja 30" {
		t.Errorf("%d stations, first %+v", len(page.Data), page.Data[0])
	}
	var del struct{ ID string }
	a.API(http.MethodDelete, "/stations/"+page.Data[0].ID, nil).Must(http.StatusOK, &del)
	if del.ID != page.Data[0].ID {
		t.Errorf("deleted %+v", del)
	}
	a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": "Caja 31"}).Must(http.StatusCreated, nil)
	pfErr(t, a.API(http.MethodDelete, "/stations/"+page.Data[0].ID, nil), 404, "NOT_FOUND")
	pfErr(t, a.API(http.MethodPost, "/queues/que_00000000000000000000000000/stations", map[string]any{"label": "X"}), 404, "NOT_FOUND")
	pfWantFields(t, a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": ""}), "label min_length")
}

func TestRunsOpenCloseAndIntake(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		q := pfQueueIn(t, a, pfEntity(t, a, "Centro"), nil)
		id := q.Runs[0].ID
		op := func(name string) pfRun {
			t.Helper()
			var r pfRun
			a.API(http.MethodPost, "/queue-runs/"+id+"/"+name, nil).Must(http.StatusCreated, &r)
			if r.ID != id || r.QueueID != q.ID {
				t.Fatalf("%s answered %+v", name, r)
			}
			return r
		}
		want := func(r pfRun, status string, intake bool) {
			t.Helper()
			if r.Status != status || r.IntakeOpen != intake {
				t.Fatalf("run %s intake %v, want %s intake %v", r.Status, r.IntakeOpen, status, intake)
			}
		}

		want(q.Runs[0], "OPEN", true)
		// Intake closes while the run stays open; repeating changes nothing.
		r := op("close-intake")
		want(r, "OPEN", false)
		again := op("close-intake")
		want(again, "OPEN", false)
		if !pfSameTime(again.UpdatedAt, r.UpdatedAt) {
			t.Error("a repeated close-intake changed the run")
		}
		want(op("open-intake"), "OPEN", true)
		want(op("open-intake"), "OPEN", true)

		// Closing closes the intake too; repeating changes nothing.
		closed := op("close")
		want(closed, "CLOSED", false)
		if closed.ClosedAt == nil {
			t.Error("closedAt not set")
		}
		if again := op("close"); !pfSameTime(again.UpdatedAt, closed.UpdatedAt) || again.Status != "CLOSED" {
			t.Errorf("a repeated close changed the run: %+v", again)
		}
		// A closed run has no intake to open or close.
		pfErr(t, a.API(http.MethodPost, "/queue-runs/"+id+"/open-intake", nil), 409, "RUN_CLOSED")
		pfErr(t, a.API(http.MethodPost, "/queue-runs/"+id+"/close-intake", nil), 409, "RUN_CLOSED")

		// Opening reopens the intake.
		opened := op("open")
		want(opened, "OPEN", true)
		if opened.ClosedAt != nil || opened.OpenedAt == nil {
			t.Errorf("reopened %+v", opened)
		}
		want(op("open"), "OPEN", true)

		var view pfQueue
		a.API(http.MethodGet, "/queues/"+q.ID, nil).Must(http.StatusOK, &view)
		if len(view.Runs) != 1 || view.Runs[0].ID != id || view.Runs[0].Status != "OPEN" || !view.Runs[0].IntakeOpen {
			t.Errorf("queue runs %+v", view.Runs)
		}
		pfWantFields(t, a.API(http.MethodPost, "/queue-runs/"+id+"/open", map[string]any{"force": true}), "force unknown_field")
		pfErr(t, a.API(http.MethodPost, "/queue-runs/run_00000000000000000000000000/close", nil), 404, "NOT_FOUND")
	})
}

// ---- pagination ----

func TestPaginationWalk(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		var existing []string
		for i := range 120 {
			existing = append(existing, pfEntity(t, a, fmt.Sprintf("Sucursal %03d", i)))
		}
		seen := map[string]int{}
		var order []string
		cursor, pages, added := "", 0, 0
		for {
			path := "/entities?limit=7"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			var page struct {
				Data       []struct{ ID string }
				Pagination struct {
					NextCursor *string
					Limit      int
				}
			}
			a.API(http.MethodGet, path, nil).Must(http.StatusOK, &page)
			pages++
			if page.Pagination.Limit != 7 || len(page.Data) > 7 || (page.Pagination.NextCursor != nil && len(page.Data) != 7) {
				t.Fatalf("page %d: %d items, %+v", pages, len(page.Data), page.Pagination)
			}
			for _, e := range page.Data {
				seen[e.ID]++
				order = append(order, e.ID)
			}
			// Items keep arriving while the walk goes on.
			if pages%3 == 0 && added < 30 {
				for range 3 {
					pfEntity(t, a, fmt.Sprintf("Nueva %d", added))
					added++
				}
			}
			if page.Pagination.NextCursor == nil {
				break
			}
			cursor = *page.Pagination.NextCursor
			if pages > 100 {
				t.Fatal("the walk does not end")
			}
		}
		for _, id := range existing {
			if seen[id] != 1 {
				t.Errorf("%s seen %d times", id, seen[id])
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s repeated %d times", id, n)
			}
		}
		if !slices.IsSorted(order) {
			t.Error("the walk is not in a stable (id) order")
		}
		if len(order) < 120 || pages < 18 {
			t.Errorf("%d items in %d pages", len(order), pages)
		}
	})
}

func TestPaginationRefusals(t *testing.T) {
	a := pfMemory(t)
	for i := range 3 {
		pfEntity(t, a, fmt.Sprintf("Sucursal %d", i))
		pfQueueIn(t, a, pfEntity(t, a, fmt.Sprintf("Cola %d", i)), nil)
	}
	next := func(key, path string) string {
		t.Helper()
		var page struct{ Pagination struct{ NextCursor *string } }
		a.APIWith(key, http.MethodGet, path, nil).Must(http.StatusOK, &page)
		if page.Pagination.NextCursor == nil {
			t.Fatalf("%s: no next page", path)
		}
		return *page.Pagination.NextCursor
	}
	cursor := next(a.Key, "/entities?limit=1")

	t.Run("tampered cursor", func(t *testing.T) {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			t.Fatalf("cursor %q is not base64url: the test needs updating", cursor)
		}
		for _, i := range []int{1, len(raw) / 2, len(raw) - 1} {
			forged := slices.Clone(raw)
			forged[i] ^= 0x01
			env := pfErr(t, a.API(http.MethodGet, "/entities?cursor="+base64.RawURLEncoding.EncodeToString(forged), nil), 400, "INVALID_CURSOR")
			if env.Error.Details["parameter"] != "cursor" {
				t.Errorf("details %v", env.Error.Details)
			}
		}
		for _, c := range []string{"abc", "", "%00", cursor + "A"} {
			pfErr(t, a.API(http.MethodGet, "/entities?cursor="+c, nil), 400, "INVALID_CURSOR")
		}
	})
	t.Run("other account's cursor", func(t *testing.T) {
		_, other := a.NewAccount("premium", "all")
		a.APIWith(other, http.MethodPost, "/entities", map[string]any{"name": "Ajena"}).Must(http.StatusCreated, nil)
		pfErr(t, a.APIWith(other, http.MethodGet, "/entities?cursor="+cursor, nil), 400, "INVALID_CURSOR")
	})
	t.Run("other list's cursor", func(t *testing.T) {
		pfErr(t, a.API(http.MethodGet, "/queues?cursor="+cursor, nil), 400, "INVALID_CURSOR")
		pfErr(t, a.API(http.MethodGet, "/entities?cursor="+next(a.Key, "/queues?limit=1"), nil), 400, "INVALID_CURSOR")
	})
	t.Run("limit out of range", func(t *testing.T) {
		for limit, rule := range map[string]string{"0": "min", "-1": "min", "201": "max", "abc": "type", "1.5": "type", "": "type"} {
			pfWantFields(t, a.API(http.MethodGet, "/entities?limit="+limit, nil), "limit "+rule)
		}
		pfWantFields(t, a.API(http.MethodGet, "/queues?limit=201", nil), "limit max")
		a.API(http.MethodGet, "/entities?limit=1", nil).Must(http.StatusOK, nil)
		a.API(http.MethodGet, "/entities?limit=200", nil).Must(http.StatusOK, nil)
	})
}

// ---- rate limit ----

func TestRateLimit(t *testing.T) {
	// Mid-minute, so the window cannot roll over during the test.
	now := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	a := apptest.Memory(t, apptest.WithClock(platformtest.NewClock(now)),
		apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 5 }))
	reset := strconv.FormatInt(now.Truncate(time.Minute).Add(time.Minute).Unix(), 10)

	key := a.NewKey(a.AccountID, "entities:read")
	for i := range 5 {
		r := a.APIWith(key, http.MethodGet, "/entities", nil)
		r.Must(http.StatusOK, nil)
		if r.Header.Get("X-RateLimit-Limit") != "5" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) || r.Header.Get("X-RateLimit-Reset") != reset {
			t.Errorf("request %d: limit %q remaining %q reset %q (want reset %s)", i+1, r.Header.Get("X-RateLimit-Limit"),
				r.Header.Get("X-RateLimit-Remaining"), r.Header.Get("X-RateLimit-Reset"), reset)
		}
	}
	r := a.APIWith(key, http.MethodGet, "/entities", nil)
	env := pfErr(t, r, 429, "RATE_LIMITED")
	pfRateHeaders(t, r)
	if r.Header.Get("Retry-After") != "30" || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("Retry-After %q, remaining %q", r.Header.Get("Retry-After"), r.Header.Get("X-RateLimit-Remaining"))
	}
	if env.Error.Details["retryAfter"] != 30.0 || env.Error.Details["limit"] != 5.0 {
		t.Errorf("details %v", env.Error.Details)
	}
	// Another key of the same account has its own budget.
	a.APIWith(a.NewKey(a.AccountID, "entities:read"), http.MethodGet, "/entities", nil).Must(http.StatusOK, nil)
}

// TestRateLimitHeadersOnEveryResponse: the headers come with every kind of
// answer an authenticated key gets, errors included.
func TestRateLimitHeadersOnEveryResponse(t *testing.T) {
	a := pfMemory(t)
	q := pfQueueIn(t, a, pfEntity(t, a, "Centro"), nil)
	a.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/close", nil).Must(http.StatusCreated, nil)
	readOnly := a.NewKey(a.AccountID, "queues:read")
	for _, r := range []*apptest.Response{
		a.API(http.MethodGet, "/entities", nil),
		a.API(http.MethodPost, "/entities", map[string]any{"name": "Norte"}),
		a.API(http.MethodPost, "/entities", map[string]any{"name": 1}),
		a.APIWith(readOnly, http.MethodPost, "/entities", map[string]any{"name": "Sur"}),
		a.API(http.MethodGet, "/queues/que_00000000000000000000000000", nil),
		a.API(http.MethodGet, "/nowhere", nil),
		a.API(http.MethodDelete, "/queues", nil),
		a.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/close-intake", nil),
		a.Do(http.MethodPost, "/api/v1/entities", "x", map[string]string{"X-API-Key": a.Key, "Content-Type": "text/plain"}),
		a.Do(http.MethodGet, "/api/v1/openapi.json", nil, nil),
	} {
		if r.Status == 0 {
			continue
		}
		pfRateHeaders(t, r)
	}
}

// TestRateLimitHeadersOnAuthFailures: spec section 8 and issue 2 section 2
// put the rate-limit headers on every /api/v1 response; a refused key is
// counted (by client address) like an unauthenticated request, so key
// guessing is bounded too.
func TestRateLimitHeadersOnAuthFailures(t *testing.T) {
	a := pfMemory(t)
	acc, key := a.NewAccount("free", "entities:read")
	_ = acc
	for name, r := range map[string]*apptest.Response{
		"401 missing key": a.Do(http.MethodGet, "/api/v1/entities", nil, nil),
		"401 unknown key": a.APIWith("qms_not_a_key_0000000000000000", http.MethodGet, "/entities", nil),
		"402 free plan":   a.APIWith(key, http.MethodGet, "/entities", nil),
	} {
		t.Run(name, func(t *testing.T) { pfRateHeaders(t, r) })
	}
}

// ---- the published document ----

func TestOpenAPIDocumentNeedsNoKey(t *testing.T) {
	a := pfMemory(t)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	a.Do(http.MethodGet, "/api/v1/openapi.json", nil, nil).Must(http.StatusOK, &doc)
	if doc.OpenAPI != "3.1.0" || doc.Paths["/api/v1/queues"]["post"] == nil || doc.Paths["/admin/v1/accounts"]["post"] == nil {
		t.Errorf("openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
}
