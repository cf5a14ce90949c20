package arch_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// coreEdges is the allow-list of imports between core modules (core/platform
// is shared by all and left out). A core reads another core's service or
// types only along these edges: a new edge is a reviewed decision, made by
// adding it here (docs/architecture.md, "Module boundaries").
var coreEdges = map[string][]string{
	"core/accesscodes":  {"core/entities", "core/queues", "core/turns"},
	"core/analytics":    {"core/queues"},
	"core/appointments": {"core/queues", "core/turns"},
	"core/counter":      {"core/queues", "core/turns", "core/workflow"},
	"core/display":      {"core/queues", "core/turns"},
	"core/entities":     {"core/location"},
	"core/events":       {"core/appointments", "core/counter", "core/display", "core/notify", "core/queues", "core/ticket", "core/turns"}, // the registry of every event's payload type (display, counter: their internal TokenChanged, LinkRevoked)
	"core/join":         {"core/display", "core/entities", "core/location", "core/queues", "core/ticket", "core/turns"},
	"core/queues":       {"core/entities", "core/location"},
	"core/stream":       {"core/accounts"},
	"core/ticket":       {"core/display", "core/entities", "core/queues", "core/turns"},
	"core/turns":        {"core/queues"},
	"core/webhooks":     {"core/events"}, // the events an endpoint may subscribe to
	"core/workflow":     {"core/queues", "core/turns"},
}

// moduleEdges is the allow-list of imports between fx modules: none. A
// module contributes to another through the extension points of package
// ports (value groups), never by importing it.
var moduleEdges = map[string][]string{}

// TestModuleBoundaries keeps the import graph of the modules the one
// written down: core→core and modules→modules imports only along the
// allow-lists above, and nothing but cmd/qms and the test harness imports
// bootstrap, the composition root. Test files are left out.
func TestModuleBoundaries(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			dep, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			if msg := edgeProblem(pkg, dep); msg != "" {
				t.Errorf("%s imports %s: %s", path, dep, msg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func edgeProblem(pkg, dep string) string {
	if (dep == "bootstrap" || strings.HasPrefix(dep, "bootstrap/")) && !strings.HasPrefix(pkg, "bootstrap") &&
		pkg != "cmd/qms" && pkg != "test/apptest" {
		return "bootstrap is the composition root: only cmd/qms and test/apptest import it"
	}
	for _, layer := range []struct {
		prefix  string
		allowed map[string][]string
	}{{"core/", coreEdges}, {"modules/", moduleEdges}} {
		from, to := top(pkg, layer.prefix), top(dep, layer.prefix)
		if from == "" || to == "" || from == to || to == "core/platform" {
			continue
		}
		for _, a := range layer.allowed[from] {
			if a == to {
				return ""
			}
		}
		return "not on the allow-list of test/arch/imports_test.go (see docs/architecture.md, Module boundaries)"
	}
	return ""
}

// top is the module a package belongs to under prefix (core/turns for
// core/turns/x), "" outside it.
func top(pkg, prefix string) string {
	rest, ok := strings.CutPrefix(pkg, prefix)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return prefix + name
}

// The allow-lists name only modules that exist, so a removed edge does not
// linger.
func TestAllowListsNameModules(t *testing.T) {
	for _, m := range []map[string][]string{coreEdges, moduleEdges} {
		var names []string
		for from, tos := range m {
			names = append(names, from)
			names = append(names, tos...)
		}
		sort.Strings(names)
		for _, n := range names {
			if _, err := os.Stat(filepath.Join("..", "..", n)); err != nil {
				t.Errorf("allow-list names %s: %v", n, err)
			}
		}
	}
}
