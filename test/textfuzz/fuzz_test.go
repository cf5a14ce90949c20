// Package textfuzz fuzzes the text rule through a real process on
// PostgreSQL (docs/strings.md). It is its own package, apart from test/e2e,
// so that `make fuzz` builds less and each execution skips e2e's OpenAPI
// check of every exchange: more executions in the same seconds.
package textfuzz

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// FuzzTextThroughPostgres sends each input string through the HTTP API of
// a process on PostgreSQL, wherever strings enter and are stored: an
// access code's code and its properties (a key and a value, jsonb), a
// turn's form answer (jsonb) and idempotency key, a station's label, and
// a query parameter. Whatever the string, no answer is a 5xx, and a
// created resource reads back exactly as its 201 showed it. The seed
// corpus runs with every `go test`; `make fuzz` explores further.
func FuzzTextThroughPostgres(f *testing.F) {
	for _, s := range []string{
		"", "Acme", "a\x00b", "\x00", "tab\there", "line\r\nbreak", "\u0085", "\x7f", "\u202eevil", "\u200b",
		" ", "Zoë 👩‍👩‍👧 مرحبا", "\\u0000", `"quoted" \ back`, "\u2028", "\ufeff", "\xff\xfe", "'; DROP TABLE turns; --",
		"$1", "%00", "{\"a\":1}", "\U0010FFFF", "\uFFFE",
	} {
		f.Add(s)
	}
	a := apptest.Postgres(f, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 1 << 30 }))
	var e struct{ ID string }
	a.API(http.MethodPost, "/entities", map[string]any{"name": "Fuzz"}).Must(http.StatusCreated, &e)
	var q struct {
		ID   string
		Runs []struct{ ID string }
	}
	a.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Fuzz", "type": "TURN",
		"preAttention": map[string]any{"questions": []any{map[string]any{"id": "q", "label": "Q"}}}}).Must(http.StatusCreated, &q)
	run := q.Runs[0].ID
	var n atomic.Int64

	f.Fuzz(func(t *testing.T, s string) {
		a.T = t
		i := strconv.FormatInt(n.Add(1), 10)
		sound := func(what string, r *apptest.Response, allowed ...int) bool {
			t.Helper()
			if r.Status >= 500 {
				t.Fatalf("%s with %q: %d %s", what, s, r.Status, r.Body)
			}
			for _, st := range allowed {
				if r.Status == st {
					return r.Status < 300
				}
			}
			t.Fatalf("%s with %q: unexpected %d %s", what, s, r.Status, r.Body)
			return false
		}
		same := func(what string, created, read []byte, key string) {
			t.Helper()
			var x, y map[string]json.RawMessage
			_ = json.Unmarshal(created, &x)
			_ = json.Unmarshal(read, &y)
			if !bytes.Equal(x[key], y[key]) {
				t.Fatalf("%s with %q: the 201 shows %s, a later read %s", what, s, x[key], y[key])
			}
		}

		r := a.API(http.MethodPost, "/access-codes", map[string]any{"code": s, "properties": map[string]any{"v": s, "k" + s: []any{s, 1}}})
		if sound("access code", r, 201, 400, 409) {
			var c struct{ ID string }
			r.Decode(&c)
			same("access code", r.Body, a.API(http.MethodGet, "/access-codes/"+c.ID, nil).Must(http.StatusOK, nil).Body, "properties")
		}
		r = a.API(http.MethodPost, "/access-codes", map[string]any{"code": "FZ-" + i, "properties": map[string]any{"v": s}})
		if sound("access-code properties", r, 201, 400) {
			var c struct{ ID string }
			r.Decode(&c)
			same("access-code properties", r.Body, a.API(http.MethodGet, "/access-codes/"+c.ID, nil).Must(http.StatusOK, nil).Body, "properties")
		}
		r = a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{"formResponse": map[string]string{"q": s}, "idempotencyKey": "fuzz-key-" + i + s})
		if sound("turn", r, 201, 400) {
			var tv struct{ ID string }
			r.Decode(&tv)
			same("turn", r.Body, a.API(http.MethodGet, "/turns/"+tv.ID, nil).Must(http.StatusOK, nil).Body, "formResponse")
		}
		r = a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": s, "description": s})
		if sound("station", r, 201, 400) {
			var st struct{ ID string }
			r.Decode(&st)
			a.API(http.MethodDelete, "/stations/"+st.ID, nil).Must(http.StatusOK, nil)
		}
		sound("query", a.API(http.MethodGet, "/queues?entityId="+url.QueryEscape(s), nil), 200, 400)
	})
}
