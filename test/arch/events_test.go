package arch_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qms-dev/qms/adapters/http/openapi"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/stream"
)

// TestEventListsFollowTheRegistry keeps every list of events a reader or a
// client sees equal to core/events' registry, the one place an event is
// declared: the OpenAPI enum of webhook event names (from which the SDK is
// generated), the table of docs/webhooks.md, and the stream's read scopes
// (an event of a subject with no scope would reach no subscriber). The
// screens' lists are derived from the registry (events.OfSubjects).
func TestEventListsFollowTheRegistry(t *testing.T) {
	want := events.Names()

	raw, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum       []string `json:"enum"`
				Properties map[string]struct {
					MaxItems *int `json:"maxItems"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Components.Schemas["WebhookEventName"].Enum; !slices.Equal(got, want) {
		t.Errorf("OpenAPI WebhookEventName enum (adapters/http/openapi/spec/19-webhooks.yaml)\n got %v\nwant %v", got, want)
	}
	if m := doc.Components.Schemas["WebhookEndpointCreate"].Properties["events"].MaxItems; m != nil {
		t.Errorf("WebhookEndpointCreate.events has maxItems %d: the enum and uniqueItems bound it, a count would go stale", *m)
	}

	if got := docTable(t, filepath.Join("..", "..", "docs", "webhooks.md"), "## Events"); !slices.Equal(got, want) {
		t.Errorf("docs/webhooks.md's Events table\n got %v\nwant %v", got, want)
	}

	// Every turn, queue and appointment event reaches the stream's
	// subscribers; a subject with no read scope (notification.*) is
	// webhooks-only, on purpose.
	for _, n := range events.OfSubjects("turn", "queue", "appointment") {
		if _, ok := stream.ReadScope(n); !ok {
			t.Errorf("%s has no read scope in core/stream.ReadScope: no stream subscriber would receive it", n)
		}
	}
}

// docTable returns the first column of the first table after the heading.
func docTable(t *testing.T, path, heading string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in, table := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == heading:
			in = true
		case !in:
		case strings.HasPrefix(line, "|"):
			table = true
			cell := strings.TrimSpace(strings.Split(line, "|")[1])
			if cell != "Event" && !strings.HasPrefix(cell, "---") {
				out = append(out, strings.Trim(cell, "`"))
			}
		case table:
			return out
		}
	}
	return out
}
