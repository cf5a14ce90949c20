package httpx

import (
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// FuzzDecode: whatever the body, the strict decoder answers nil or a 400
// VALIDATION_ERROR (never a panic, never another error), and a body it
// accepts holds no string that breaks the text rule of its field: no
// control character or invalid UTF-8 gets past it to a repository. The
// seed corpus runs with every `go test`; `make fuzz` explores further.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"name":"Acme"}`, `{"name":"a\u0000b"}`, `{"name":" "}`, `{"name":"\u202eevil"}`,
		`{"formResponse":{"plate":"ABC\n1"}}`, `{"formResponse":{"\u0000":"x"}}`,
		`{"properties":{"a":[1,{"b":"\u0007"}],"c":-0,"d":1e400}}`, `{"code":"VIP\ud800"}`,
		`{"stations":[{"label":"Desk","description":"first\r\nfloor"}]}`,
		`{"preAttention":{"instructions":"\t","questions":[{"id":"q","label":"\u200b","options":["Yes",{"label":"No"}]}]}}`,
		`{"location":{"lat":1,"lng":2,"name":"\u2066x"}}`, `{"name":null,"description":"\u0085"}`,
		`{"notes":"a\u2028b","customerName":"Zoë"}`, "{\"name\":\"\xff\"}", `[]`, `"x"`, `{"a":`, `{}{}`,
	} {
		f.Add([]byte(seed))
	}
	targets := []func() any{
		func() any { return new(entities.CreateInput) },
		func() any { return new(entities.UpdateInput) },
		func() any { return new(queues.CreateInput) },
		func() any { return new(turns.CreateInput) },
		func() any { return new(accesscodes.CreateInput) },
		func() any { return new(appointments.ScheduleInput) },
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, target := range targets {
			dst := target()
			err := decodeBytes(body, dst)
			if err != nil {
				if pe, ok := platform.AsError(err); !ok || pe.Kind != platform.KindInvalid || pe.Code != platform.CodeValidation {
					t.Fatalf("%T: %q: not a VALIDATION_ERROR: %v", dst, body, err)
				}
				continue
			}
			if fields := checkText(dst); len(fields) > 0 {
				t.Fatalf("%T: %q accepted with %v", dst, body, fields)
			}
			// What was accepted encodes again (the 201 can be written).
			out, err := json.Marshal(dst)
			if err != nil || !utf8.Valid(out) {
				t.Fatalf("%T: %q: re-encoding failed: %v", dst, body, err)
			}
		}
	})
}

// FuzzCheckText: a string any kind accepts is valid UTF-8 without NUL
// (PostgreSQL's text refuses both), and plain ⊂ free: what the strictest
// rules accept, free text accepts too.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{"", "Acme", "a\x00b", "\t", "\r\n", " ", "\u202e", "\u200d", "Zoë", "\xff", "\u0085", "👩‍👩‍👧"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range []platform.TextKind{platform.TextPlain, platform.TextFree, platform.TextName} {
			rule, _ := platform.CheckText(s, k)
			if rule != "" {
				continue
			}
			if !utf8.ValidString(s) {
				t.Fatalf("kind %d accepted invalid UTF-8 %q", k, s)
			}
			for _, r := range s {
				if r == 0 {
					t.Fatalf("kind %d accepted a NUL in %q", k, s)
				}
			}
			if free, _ := platform.CheckText(s, platform.TextFree); free != "" {
				t.Fatalf("kind %d accepted %q, which free text refuses (%s)", k, s, free)
			}
		}
	})
}
