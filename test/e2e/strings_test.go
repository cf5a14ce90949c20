package e2e

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"testing"

	"github.com/qms-dev/qms/test/apptest"
)

// TestOneRuleForText (issue 14): in both storage modes, a NUL or other
// control character anywhere a string enters (body members, map keys,
// JSON values, query parameters) is 400 VALIDATION_ERROR naming the field
// and the rule, never a 500; names refuse bidirectional controls,
// invisible characters and whitespace-only values; free text keeps tab,
// CR and LF; and what a 201 shows every later read shows, byte for byte.
func TestOneRuleForText(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		w := aptStart(t, start)
		questions := []any{}
		for _, id := range []string{"plate", "comment", "emoji"} {
			questions = append(questions, map[string]any{"id": id, "label": id})
		}
		queueID, runID := w.queue("HYBRID", map[string]any{"stations": []map[string]any{{"label": "Desk 1"}},
			"preAttention": map[string]any{"instructions": "Bring:\n\t- your card", "questions": questions}})
		slots := w.generate(runID, map[string]any{"date": "2026-03-07", "startTime": "13:00", "endTime": "14:00", "slotMinutes": 30, "capacity": 5})

		refused := func(t *testing.T, method, path string, body any, field, rule string) {
			t.Helper()
			r := w.app.API(method, path, body)
			var env struct {
				Error struct {
					Code    string
					Details struct{ Fields []struct{ Path, Rule string } }
				}
			}
			r.Decode(&env)
			if r.Status != http.StatusBadRequest || env.Error.Code != "VALIDATION_ERROR" || len(env.Error.Details.Fields) == 0 ||
				env.Error.Details.Fields[0].Path != field || env.Error.Details.Fields[0].Rule != rule {
				t.Errorf("%s %s: want 400 %s/%s, got %d %s", method, path, field, rule, r.Status, r.Body)
			}
		}
		const nul = "a\x00b"
		cases := []struct {
			name, method, path string
			body               any
			field, rule        string
		}{
			{"queue name", "POST", "/queues", map[string]any{"entityId": w.entity, "name": nul, "type": "TURN"}, "name", "control_character"},
			{"station label", "POST", "/queues/" + queueID + "/stations", map[string]any{"label": nul}, "label", "control_character"},
			{"turn phone", "POST", "/queue-runs/" + runID + "/turns", map[string]any{"phone": "+1212555\x000"}, "phone", "control_character"},
			{"turn idempotency key", "POST", "/queue-runs/" + runID + "/turns", map[string]any{"idempotencyKey": "key-\x00-0001"}, "idempotencyKey", "control_character"},
			{"form answer", "POST", "/queue-runs/" + runID + "/turns", map[string]any{"formResponse": map[string]string{"plate": nul}}, "formResponse.plate", "control_character"},
			{"form key", "POST", "/queue-runs/" + runID + "/turns", map[string]any{"formResponse": map[string]string{nul: "x"}}, "formResponse", "control_character"},
			{"access code", "POST", "/access-codes", map[string]any{"code": "VIP\x00"}, "code", "control_character"},
			{"access-code property", "POST", "/access-codes", map[string]any{"code": "VIP-9", "properties": map[string]any{"car": map[string]any{"plate": nul}}}, "properties.car.plate", "control_character"},
			{"appointment name", "POST", "/queue-runs/" + runID + "/appointments", map[string]any{"slotId": slots[0].ID, "customerName": nul}, "customerName", "control_character"},
			{"appointment notes", "POST", "/queue-runs/" + runID + "/appointments", map[string]any{"slotId": slots[0].ID, "notes": "ok\n\x00"}, "notes", "control_character"},
			{"entity name", "POST", "/entities", map[string]any{"name": nul}, "name", "control_character"},
			{"entity escape", "POST", "/entities", map[string]any{"name": "Acme\x1b[2J"}, "name", "control_character"},
			{"name of spaces", "POST", "/entities", map[string]any{"name": " \u00a0\u3000 "}, "name", "no_visible_character"},
			{"name of a joiner", "POST", "/queues/" + queueID + "/stations", map[string]any{"label": "\u200d"}, "label", "no_visible_character"},
			{"right-to-left override", "POST", "/queues/" + queueID + "/stations", map[string]any{"label": "Desk \u202e1"}, "label", "bidi_control"},
			{"isolate", "POST", "/queue-runs/" + runID + "/display-tokens", map[string]any{"label": "\u2067Lobby"}, "label", "bidi_control"},
			{"zero-width space", "POST", "/entities", map[string]any{"name": "Ac\u200bme"}, "name", "invisible_character"},
			{"query parameter", "GET", "/queues?entityId=" + url.QueryEscape(nul), nil, "entityId", "control_character"},
			{"query, invalid UTF-8", "GET", "/queue-runs/" + runID + "/appointments?date=%ff", nil, "date", "invalid_utf8"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { refused(t, c.method, c.path, c.body, c.field, c.rule) })
		}

		// Accepted text reads back as it was sent, in the 201 and after.
		same := func(t *testing.T, what string, created, read []byte, pick func(map[string]any) any) {
			t.Helper()
			var a, b map[string]any
			if err := json.Unmarshal(created, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(read, &b); err != nil {
				t.Fatal(err)
			}
			x, _ := json.Marshal(pick(a))
			y, _ := json.Marshal(pick(b))
			if !bytes.Equal(x, y) {
				t.Errorf("%s: the 201 shows %s, a later read %s", what, x, y)
			}
		}
		field := func(k string) func(map[string]any) any { return func(m map[string]any) any { return m[k] } }
		t.Run("round trip", func(t *testing.T) {
			props := map[string]any{
				"plate": "ABC-123", "note": "line 1\r\n\tline 2", "unicode": "Zoë 👩‍👩‍👧 مرحبا\u2028end \\ \" / <>&",
				"n": []any{0, -1, 1.5, 1e21, 123456789012, math.Copysign(0, -1), 1e-7, 0.1}, "nested": map[string]any{"deep": []any{map[string]any{"x": nil, "t": true}}},
				"empty": map[string]any{}, "list": []any{}, "": "empty key",
			}
			r := w.app.API("POST", "/access-codes", map[string]any{"code": "VIP-RT", "properties": props}).Must(http.StatusCreated, nil)
			var c struct{ ID string }
			r.Decode(&c)
			got := w.app.API("GET", "/access-codes/"+c.ID, nil).Must(http.StatusOK, nil)
			same(t, "access-code properties", r.Body, got.Body, field("properties"))

			form := map[string]string{"plate": "ÀÉÎ-\u00a0-1", "comment": "two\nlines\ttab", "emoji": "🚗"}
			tr := w.app.API("POST", "/queue-runs/"+runID+"/turns", map[string]any{"formResponse": form}).Must(http.StatusCreated, nil)
			var turn struct{ ID string }
			tr.Decode(&turn)
			same(t, "turn formResponse", tr.Body, w.app.API("GET", "/turns/"+turn.ID, nil).Must(http.StatusOK, nil).Body, field("formResponse"))

			ar := w.app.API("POST", "/queue-runs/"+runID+"/appointments", map[string]any{"slotId": slots[1].ID, "customerName": "Ñandú \u200fשלום",
				"notes": "ring twice\r\n\tthen wait", "formResponse": form}).Must(http.StatusCreated, nil)
			var apt struct{ ID string }
			ar.Decode(&apt)
			read := w.app.API("GET", "/appointments/"+apt.ID, nil).Must(http.StatusOK, nil).Body
			for _, k := range []string{"customerName", "notes", "formResponse"} {
				same(t, "appointment "+k, ar.Body, read, field(k))
			}
		})
	})
}
