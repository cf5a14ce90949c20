package platform

import (
	"strings"
	"testing"
	"time"
)

// TestNewID: "prefix_" and 26 Crockford base32 characters, strictly
// increasing within the process.
func TestNewID(t *testing.T) {
	prev := ""
	for range 1000 {
		id := NewID(PrefixRequest)
		rest, ok := strings.CutPrefix(id, PrefixRequest+"_")
		if !ok || len(rest) != 26 || strings.Trim(rest, crockford) != "" {
			t.Fatalf("malformed id %q", id)
		}
		if id <= prev {
			t.Fatalf("%q does not sort after %q", id, prev)
		}
		prev = id
	}
	if n := testing.AllocsPerRun(100, func() { _ = NewID(PrefixTurn) }); n > 1 {
		t.Errorf("NewID makes %v allocations, want 1", n)
	}
}

// TestNewRequestIDAt: NewID's form, in the same order as the process's
// other ids, and different ids for requests of one millisecond.
func TestNewRequestIDAt(t *testing.T) {
	prev := ""
	seen := map[string]bool{}
	now := time.Now()
	for i := range 1000 {
		id := NewRequestIDAt(now)
		if i%2 == 1 {
			id = NewID(PrefixRequest)
		}
		rest, ok := strings.CutPrefix(id, PrefixRequest+"_")
		if !ok || len(rest) != 26 || strings.Trim(rest, crockford) != "" {
			t.Fatalf("malformed id %q", id)
		}
		if id <= prev || seen[id] {
			t.Fatalf("%q does not sort after %q", id, prev)
		}
		prev, seen[id] = id, true
	}
	if n := testing.AllocsPerRun(100, func() { _ = NewRequestIDAt(now) }); n > 1 {
		t.Errorf("NewRequestIDAt makes %v allocations, want 1", n)
	}
}
