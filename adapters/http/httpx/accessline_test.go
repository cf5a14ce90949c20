package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// TestAccessLineAsJSONHandler holds AppendJSON to the bytes slog's JSON
// handler writes for the same record, and to writing them for the lines
// of real requests.
func TestAccessLineAsJSONHandler(t *testing.T) {
	madrid, err := time.LoadLocation("Europe/Madrid")
	if err != nil {
		t.Fatal(err)
	}
	base := AccessLine{Time: time.Date(2026, 11, 24, 18, 31, 6, 123456789, time.UTC), Level: slog.LevelInfo,
		Method: "GET", Route: "/api/v1/turns/:turnId", Status: 200, Duration: 1234567,
		RequestID: "req_01JABCDEFGHJKMNPQRSTVWXYZ0", Account: "acc_01JABCDEFGHJKMNPQRSTVWXYZ0", Client: "127.0.0.1"}
	type tc struct {
		name  string
		mod   func(*AccessLine)
		plain bool // AppendJSON writes it itself
	}
	cases := []tc{
		{"a read", nil, true},
		{"an error", func(l *AccessLine) { l.Level, l.Status = slog.LevelError, 500 }, true},
		{"whole seconds", func(l *AccessLine) { l.Time = l.Time.Truncate(time.Second) }, true},
		{"trailing zeros", func(l *AccessLine) { l.Time = l.Time.Truncate(time.Millisecond) }, true},
		{"another zone", func(l *AccessLine) { l.Time = l.Time.In(madrid) }, true},
		{"a fixed zone", func(l *AccessLine) { l.Time = l.Time.In(time.FixedZone("", -(3*3600 + 1800))) }, true},
		{"monotonic clock", func(l *AccessLine) { l.Time = time.Now() }, true},
		{"year 0", func(l *AccessLine) { l.Time = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC) }, true},
		{"year 10000", func(l *AccessLine) { l.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
		{"year -1", func(l *AccessLine) { l.Time = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
		{"no time", func(l *AccessLine) { l.Time = time.Time{} }, false},
		{"a level between", func(l *AccessLine) { l.Level = slog.LevelInfo + 2 }, true},
		{"no route, account or request", func(l *AccessLine) { l.Route, l.Account, l.RequestID = "-", "", "" }, true},
		{"an IPv6 client", func(l *AccessLine) { l.Client = "2001:db8::1" }, true},
		{"a long duration", func(l *AccessLine) { l.Duration = 1<<63 - 1 }, true},
		{"a negative duration", func(l *AccessLine) { l.Duration = -5 }, true},
		{"unicode", func(l *AccessLine) { l.Method = "GÉT" }, false},
		{"a line separator", func(l *AccessLine) { l.Route = "/a\u2028b" }, false},
		{"invalid UTF-8", func(l *AccessLine) { l.Method = "G\xffT" }, false},
		{"html characters", func(l *AccessLine) { l.Method = "<&>" }, true},
	}
	// Every ASCII byte as the method's, the client's to send.
	for b := 0; b < 0x80; b++ {
		plain := b >= 0x20 && b != '"' && b != '\\'
		cases = append(cases, tc{fmt.Sprintf("byte %#02x", b),
			func(l *AccessLine) { l.Method = "G" + string(rune(b)) + "T" }, plain})
	}
	for _, c := range cases {
		l := base
		if c.mod != nil {
			c.mod(&l)
		}
		var want bytes.Buffer
		if err := slog.NewJSONHandler(&want, nil).Handle(context.Background(), l.Record()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, ok := l.AppendJSON([]byte("kept"))
		if ok != c.plain {
			t.Errorf("%s: AppendJSON wrote it itself: %v, want %v", c.name, ok, c.plain)
		}
		if !ok {
			if string(got) != "kept" {
				t.Errorf("%s: refused, but changed the buffer: %q", c.name, got)
			}
			continue
		}
		if string(got) != "kept"+want.String() {
			t.Errorf("%s:\n got %q\nwant %q", c.name, strings.TrimPrefix(string(got), "kept"), want.String())
		}
	}
}

// accessOnly is a JSON handler that writes access lines itself, and
// counts them.
type accessOnly struct {
	slog.Handler
	out   *bytes.Buffer
	lines int
}

func (h *accessOnly) HandleAccess(_ context.Context, l AccessLine) (bool, error) {
	b, ok := l.AppendJSON(nil)
	if ok {
		h.lines++
		h.out.Write(b)
	}
	return ok, nil
}

// TestAccessLogThroughAccessHandler: a handler that writes access lines
// itself gets them, and they are the lines the handler would write.
func TestAccessLogThroughAccessHandler(t *testing.T) {
	var viaRecord, viaLine bytes.Buffer
	h := &accessOnly{Handler: slog.NewJSONHandler(&viaLine, nil), out: &viaLine}
	for _, log := range []*slog.Logger{slog.New(slog.NewJSONHandler(&viaRecord, nil)), slog.New(h)} {
		app := NewApp(AppConfig{Logger: log})
		app.Get("/ok", func(c *fiber.Ctx) error { return OK(c, fiber.Map{}) })
		do(t, app, "GET", "/ok", "", HeaderRequestID, "req-fixed")
	}
	if h.lines != 1 {
		t.Fatalf("%d lines through HandleAccess, want 1", h.lines)
	}
	// The same line but for the time and the duration.
	norm := func(s string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%v: %q", err, s)
		}
		delete(m, "time")
		delete(m, "duration")
		b, _ := json.Marshal(m)
		return string(b)
	}
	if a, b := norm(viaRecord.String()), norm(viaLine.String()); a != b {
		t.Fatalf("through the record %s, through HandleAccess %s", a, b)
	}
}
