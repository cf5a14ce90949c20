package ports_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/ports"
)

type args struct {
	ID string `json:"id"`
}

func TestTypedDecodesOnce(t *testing.T) {
	var got args
	h := ports.Typed("test", func(_ context.Context, a args, _ ports.JobContext) error { got = a; return nil },
		func(a args) error {
			if a.ID == "" {
				return errors.New("no id")
			}
			return nil
		})
	if err := h(context.Background(), ports.JobContext{ID: "1", Kind: "k", Args: []byte(`{"id":"x"}`)}); err != nil || got.ID != "x" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	for _, raw := range []string{`{"id":`, `{}`} {
		err := h(context.Background(), ports.JobContext{ID: "2", Kind: "k", Args: []byte(raw)})
		if err == nil || !strings.Contains(err.Error(), "job 2 (k): malformed arguments") {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestBackoffDoublesWithinItsLimit(t *testing.T) {
	b := ports.Backoff(5 * time.Minute)
	for attempt, want := range map[int]time.Duration{1: time.Second, 3: 4 * time.Second, 9: 256 * time.Second, 10: 5 * time.Minute, 100: 5 * time.Minute} {
		for range 20 {
			if d := b(attempt); d < want*3/4 || d >= want*5/4 {
				t.Fatalf("attempt %d: %v, want %v ±25%%", attempt, d, want)
			}
		}
	}
}
