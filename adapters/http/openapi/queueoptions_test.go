package openapi

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestQueueOptionsTableMatchesTheDocument keeps docs/queues.md's options
// table in step with the queue body the API takes: every member of the
// QueueCreate schema, and every member of a nested object (help.enabled,
// sla.maxWaitMinutes, ...), has a row, and every row names such a member.
// A new option cannot land without saying what it does and which test
// proves it.
func TestQueueOptionsTableMatchesTheDocument(t *testing.T) {
	b, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Ref        string             `json:"$ref"`
		Type       any                `json:"type"`
		Properties map[string]*schema `json:"properties"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]*schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(s *schema) *schema {
		for s != nil && s.Ref != "" {
			s = doc.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
		}
		return s
	}
	create := doc.Components.Schemas["QueueCreate"]
	if create == nil || len(create.Properties) == 0 {
		t.Fatal("the document has no QueueCreate schema with properties")
	}
	var want []string
	for name, p := range create.Properties {
		if p := resolve(p); p != nil && len(p.Properties) > 0 {
			for sub := range p.Properties {
				want = append(want, name+"."+sub)
			}
			continue
		}
		want = append(want, name)
	}
	slices.Sort(want)

	text, err := os.ReadFile("../../../docs/queues.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(text), "<!-- options table")
	end := strings.Index(string(text), "<!-- end of options table -->")
	if start < 0 || end < start {
		t.Fatal("docs/queues.md lacks the options table's markers")
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z.]+)` \\|(.*)\\|(.*)\\|(.*)\\|$")
	var got []string
	for _, m := range row.FindAllStringSubmatch(string(text[start:end]), -1) {
		got = append(got, m[1])
		if strings.TrimSpace(m[4]) == "" {
			t.Errorf("docs/queues.md: %s names no test that proves it", m[1])
		}
	}
	slices.Sort(got)
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok {
			t.Errorf("the queue option %s has no row in docs/queues.md's options table", w)
		}
	}
	for _, g := range got {
		if _, ok := slices.BinarySearch(want, g); !ok {
			t.Errorf("docs/queues.md's options table has a row for %s, which the QueueCreate schema does not have", g)
		}
	}
	if c := slices.Compact(slices.Clone(got)); len(c) != len(got) {
		t.Errorf("docs/queues.md's options table names an option twice")
	}

	// Every test the table names exists: a renamed or deleted test leaves
	// no row pointing at nothing.
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir("../../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllSubmatch(b, -1) {
				defined[string(m[1])] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range row.FindAllStringSubmatch(string(text[start:end]), -1) {
		for _, name := range regexp.MustCompile(`Test\w+`).FindAllString(m[4], -1) {
			if !defined[name] {
				t.Errorf("docs/queues.md: %s names %s, which no test file declares", m[1], name)
			}
		}
	}
}
