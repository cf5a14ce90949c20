package e2e

// Helpers of the platform tests: the error envelope's fields, rate-limit
// headers, entities and queues made over HTTP, subset comparisons.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
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
	pfErr(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	var fields []pfField
	for _, f := range r.FieldErrors() {
		fields = append(fields, pfField{Path: f.Path, Rule: f.Rule, Message: f.Message})
	}
	if len(fields) == 0 {
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
	var e client.Entity
	a.API(http.MethodPost, "/entities", map[string]any{"name": name}).Must(http.StatusCreated, &e)
	return e.ID
}

func pfQueueIn(t *testing.T, a *apptest.App, entityID string, extra map[string]any) client.QueueView {
	t.Helper()
	body := map[string]any{"entityId": entityID, "name": "Caja", "type": "TURN"}
	maps.Copy(body, extra)
	var q client.QueueView
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
