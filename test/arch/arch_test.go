// Package arch_test holds the architecture's rules as tests.
package arch_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/qms-dev/qms"

// TestCoreImportsOnlyStdlibAndCore keeps the domain pure: a package under
// core/ may import the standard library and other core packages, nothing
// else (no adapter, no port, no third-party library). Test files are left
// out: a domain test may drive the core with the memory adapter.
func TestCoreImportsOnlyStdlibAndCore(t *testing.T) {
	root := filepath.Join("..", "..", "core")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			inCore := p == module+"/core" || strings.HasPrefix(p, module+"/core/")
			if strings.Contains(first, ".") && !inCore {
				t.Errorf("%s imports %s: core packages may import only the standard library and core/...", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no core files found: is the test running from test/arch?")
	}
}

// TestLayoutOfTheDesign checks the top-level layout the design card names.
func TestLayoutOfTheDesign(t *testing.T) {
	for _, dir := range []string{"core", "ports", "adapters", "modules", "bootstrap", "configs", "test", "cmd/qms", "docs", ".ci"} {
		if st, err := os.Stat(filepath.Join("..", "..", dir)); err != nil || !st.IsDir() {
			t.Errorf("missing directory %s", dir)
		}
	}
	for _, file := range []string{"go.mod", "go.sum", "Makefile", "README.md", "configs/default.yaml", ".ci/run"} {
		if _, err := os.Stat(filepath.Join("..", "..", file)); err != nil {
			t.Errorf("missing file %s", file)
		}
	}
}
