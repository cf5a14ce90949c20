package history

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
)

// invariant counts how often one rule was checked and how often it failed,
// with the first failures spelled out.
type invariant struct {
	name     string
	checked  int
	failed   int
	examples []string
}

// checker collects the invariants of one backend's run.
type checker struct {
	mu    sync.Mutex
	order []string
	m     map[string]*invariant
}

func newChecker() *checker { return &checker{m: map[string]*invariant{}} }

// maxExamples bounds the failures printed per invariant, and perPrefix
// those of one kind (the text before the first colon, "run B" say), so the
// first kind of failure does not hide the others.
const (
	maxExamples = 9
	perPrefix   = 3
)

// check records one check of the named invariant; when ok is false, the
// message (which names the op, the turn and what was expected) is kept.
func (c *checker) check(name string, ok bool, format string, args ...any) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	inv := c.m[name]
	if inv == nil {
		inv = &invariant{name: name}
		c.m[name] = inv
		c.order = append(c.order, name)
	}
	inv.checked++
	if !ok {
		inv.failed++
		msg := fmt.Sprintf(format, args...)
		prefix, _, _ := strings.Cut(msg, ":")
		same := 0
		for _, e := range inv.examples {
			if strings.HasPrefix(e, prefix+":") {
				same++
			}
		}
		if len(inv.examples) < maxExamples && same < perPrefix {
			inv.examples = append(inv.examples, msg)
		}
	}
	return ok
}

// table prints every invariant with its counts.
func (c *checker) table() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	names := append([]string(nil), c.order...)
	sort.Strings(names)
	fmt.Fprintf(&b, "%-70s %9s %9s\n", "invariant", "checked", "failed")
	for _, n := range names {
		inv := c.m[n]
		fmt.Fprintf(&b, "%-70s %9d %9d\n", n, inv.checked, inv.failed)
	}
	return b.String()
}

// report fails the test once per broken invariant, with its examples.
func (c *checker) report(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.order {
		inv := c.m[n]
		if inv.failed == 0 {
			continue
		}
		t.Errorf("invariant %q failed %d of %d checks:\n  %s", n, inv.failed, inv.checked,
			strings.Join(inv.examples, "\n  "))
	}
}
