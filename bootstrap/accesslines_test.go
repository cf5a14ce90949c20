package bootstrap

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/configs/config"
)

// TestAccessLinesAsTheProcessLogger: with the JSON format, the process's
// logger writes access lines itself, in the bytes NewLogger's handler
// writes for their records, errors flushed at once; with the text format,
// or attributes added, it leaves them to the handler.
func TestAccessLinesAsTheProcessLogger(t *testing.T) {
	ctx := context.Background()
	line := httpx.AccessLine{Time: time.Now(), Level: slog.LevelInfo, Method: "GET", Route: "/api/v1/turns/:turnId",
		Status: 200, Duration: 1500 * time.Microsecond, RequestID: "req_1", Account: "acc_1", Client: "10.0.0.1"}
	for _, format := range []string{"json", "text"} {
		cfg, err := config.Load("", []string{"QMS_LOG_FORMAT=" + format})
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := NewLogger(cfg, &want).Handler().Handle(ctx, line.Record()); err != nil {
			t.Fatal(err)
		}
		var out lockedBuffer
		buf := newLogBuffer(&out, time.Hour, 1<<20)
		log := processLogger(cfg, buf)
		done, err := log.Handler().(httpx.AccessHandler).HandleAccess(ctx, line)
		if err != nil || done != (format == "json") {
			t.Fatalf("%s: written by the process's handler itself: %v %v", format, done, err)
		}
		if !done {
			continue
		}
		_ = buf.Flush()
		if out.String() != want.String() {
			t.Fatalf("%s:\n got %q\nwant %q", format, out.String(), want.String())
		}
		errLine := line
		errLine.Level, errLine.Status = slog.LevelError, 500
		if done, _ := log.Handler().(httpx.AccessHandler).HandleAccess(ctx, errLine); !done || out.Writes() != 2 {
			t.Fatalf("an error's line did not go out at once: %v, %d writes", done, out.Writes())
		}
		with := log.With("component", "x").Handler().(httpx.AccessHandler)
		if done, _ := with.HandleAccess(ctx, line); done {
			t.Fatalf("%s: a logger with attributes wrote the line without them", format)
		}
		_ = buf.Close()
	}
}
