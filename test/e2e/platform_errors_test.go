package e2e

// The error envelope and its classes, strict bodies and every bound of
// the spec (issue 2, sections 2 and 4), through a real process.

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/openapitest"
)

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

// TestLargeHeadersAndQueryStrings: the request line and headers together
// may reach 16 KiB (a 4,000-character query string, an 8 KB cookie, what
// proxies and SSO allow); past the limit the answer is 431
// REQUEST_HEADER_FIELDS_TOO_LARGE in the envelope, with the limit. Before
// issue 23 fasthttp's 4 KiB default refused both ordinary requests.
func TestLargeHeadersAndQueryStrings(t *testing.T) {
	a := pfMemory(t)
	longQuery := "/queues?limit=50&x=" + strings.Repeat("q", 4000)
	// Unknown query parameters are ignored by lists: this is the size test.
	r := a.API(http.MethodGet, longQuery, nil)
	if r.Status == http.StatusRequestHeaderFieldsTooLarge || r.Status == http.StatusRequestURITooLong {
		t.Fatalf("a 4,000-character query string: %d %s", r.Status, r.Body)
	}
	cookie := map[string]string{"X-API-Key": a.Key, "Cookie": "sso=" + strings.Repeat("c", 8000) + "; other=" + strings.Repeat("d", 4000)}
	r = a.Do(http.MethodGet, "/api/v1/queues", nil, cookie)
	r.Must(http.StatusOK, nil)

	// Past 16 KiB: the envelope, over a raw connection that sends the
	// headers and then reads (the answer comes before the end of the
	// headers is read).
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(a.BaseURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /api/v1/queues HTTP/1.1\r\nHost: qms.test\r\nX-API-Key: %s\r\nCookie: sso=%s\r\n\r\n", a.Key, strings.Repeat("c", 17<<10))
	raw, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Body.Close()
	body, _ := io.ReadAll(raw.Body)
	resp := &apptest.Response{T: t, Status: raw.StatusCode, Header: raw.Header, Body: body}
	req, _ := http.NewRequest(http.MethodGet, a.BaseURL+"/api/v1/queues", nil)
	apptest.Check(t, req, resp)
	env := pfErr(t, resp, http.StatusRequestHeaderFieldsTooLarge, "REQUEST_HEADER_FIELDS_TOO_LARGE")
	if env.Error.Details["limit"] != float64(16<<10) {
		t.Errorf("details %v", env.Error.Details)
	}
}
