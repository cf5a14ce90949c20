package bootstrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/qms-dev/qms/ports"
)

// TestAJobThatGivesUpIsSurfaced: a job's failed attempts before its last
// are retried quietly; the last failed attempt, after which the runner
// discards the job, is counted in qms_jobs_given_up_total{kind} and logged
// at error with the kind, the job, its arguments and the error (issue 23:
// the HYBRID join job was discarded with nothing but River's own record).
func TestAJobThatGivesUpIsSurfaced(t *testing.T) {
	var logs bytes.Buffer
	g := newGiveUps(slog.New(slog.NewJSONHandler(&logs, nil)))
	kind := g.wrap(ports.JobKind{Name: "appointments.join_line", Handler: func(context.Context, ports.JobContext) error {
		return errors.New("database away")
	}})
	ok := g.wrap(ports.JobKind{Name: "turns.tolerance", Handler: func(context.Context, ports.JobContext) error { return nil }})
	args := json.RawMessage(`{"appointmentId":"apt_1"}`)
	for attempt := 1; attempt <= 10; attempt++ {
		if err := kind.Handler(context.Background(), ports.JobContext{ID: "42", Kind: kind.Name, Args: args, Attempt: attempt, MaxAttempts: 10}); err == nil {
			t.Fatal("the handler's error was swallowed")
		}
		if attempt < 10 && logs.Len() > 0 {
			t.Fatalf("attempt %d of 10 logged %s", attempt, logs.String())
		}
	}
	_ = ok.Handler(context.Background(), ports.JobContext{ID: "43", Kind: ok.Name, Attempt: 5, MaxAttempts: 5})
	if n := counted(t, g, "appointments.join_line"); n != 1 {
		t.Fatalf("given up counted %v times, want 1", n)
	}
	if n := counted(t, g, "turns.tolerance"); n != 0 {
		t.Fatalf("a job that succeeded on its last attempt counted %v", n)
	}
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil || strings.Count(logs.String(), "\n") != 1 {
		t.Fatalf("want one log line, got %q", logs.String())
	}
	if line["level"] != "ERROR" || line["kind"] != "appointments.join_line" || line["job_id"] != "42" || line["attempts"] != 10.0 ||
		line["error"] != "database away" || !strings.Contains(line["args"].(string), "apt_1") {
		t.Fatalf("log line %v", line)
	}
}

func counted(t *testing.T, g *giveUps, kind string) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.counter.WithLabelValues(kind).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
