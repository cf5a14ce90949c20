package arch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// coreFile is a parsed non-test file of core/ and its package
// (module-relative, core/turns).
type coreFile struct {
	path, pkg string
	f         *ast.File
}

// parseCore parses every non-test file under core/.
func parseCore(t *testing.T, fset *token.FileSet) []coreFile {
	t.Helper()
	root := filepath.Join("..", "..")
	var files []coreFile
	err := filepath.WalkDir(filepath.Join(root, "core"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		files = append(files, coreFile{path, filepath.ToSlash(rel), f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no file found under core/: the walk is broken")
	}
	return files
}

// interfacesOf calls f with each interface type f declares.
func interfacesOf(file *ast.File, f func(ts *ast.TypeSpec)) {
	ast.Inspect(file, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok {
			if _, ok := ts.Type.(*ast.InterfaceType); ok {
				f(ts)
			}
		}
		return true
	})
}

// TestNoTypeAssertionOnAPortInCore keeps every capability of a port in the
// port's own methods: no package under core/ asks at run time whether a
// value of an interface it was given can do more (x.(SomePort), a case of
// a type switch naming one, or x.(interface{ ... })). A storage speed-up
// lives behind a method shaped like the use case that both backends
// implement (turns.RunLocks), and where a backend has nothing to add the
// method says so (memory's CachedQueueOfRun answers false). The contract
// suite then runs every such path on both backends, not only through a
// fake. Assertions to concrete types (a *string from a decoded body) are
// left alone: they ask what a value is, not what a port can do.
func TestNoTypeAssertionOnAPortInCore(t *testing.T) {
	fset := token.NewFileSet()
	files := parseCore(t, fset)
	// interfaces are the interface types core declares, by package path
	// (module-relative) and name.
	interfaces := map[string]bool{}
	for _, fl := range files {
		interfacesOf(fl.f, func(ts *ast.TypeSpec) { interfaces[fl.pkg+"."+ts.Name.Name] = true })
	}
	for _, fl := range files {
		imports := map[string]string{}
		for _, imp := range fl.f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = strings.TrimPrefix(p, module+"/")
		}
		// port names the core interface typ refers to, "" for any other type.
		port := func(typ ast.Expr) string {
			switch x := typ.(type) {
			case *ast.InterfaceType:
				return "interface{...}"
			case *ast.Ident:
				if interfaces[fl.pkg+"."+x.Name] {
					return x.Name
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && interfaces[imports[id.Name]+"."+x.Sel.Name] {
					return id.Name + "." + x.Sel.Name
				}
			}
			return ""
		}
		report := func(n ast.Node, typ ast.Expr) {
			if p := port(typ); p != "" {
				t.Errorf("%s: a run-time type assertion to %s: make the capability a method of the port (docs/architecture.md, Ports)",
					fset.Position(n.Pos()), p)
			}
		}
		ast.Inspect(fl.f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.TypeAssertExpr:
				if x.Type != nil { // x.(type) is a type switch's, checked by its cases
					report(x, x.Type)
				}
			case *ast.TypeSwitchStmt:
				for _, c := range x.Body.List {
					for _, typ := range c.(*ast.CaseClause).List {
						report(c, typ)
					}
				}
			}
			return true
		})
	}
}

// notPorts are interfaces of core that are no port, declared beside what
// they describe: platform.Payload is what an event's data type is (every
// payload implements it, no adapter does), PatchField and StringShorthand
// the decoding protocol of platform's own patch types.
var notPorts = map[string]bool{
	"core/platform.Payload": true, "core/platform.PatchField": true, "core/platform.StringShorthand": true,
}

// TestPortsLiveInPortsGo gives ports one home: every interface a core
// package declares, the ports its use cases consume (its repository, the
// narrow views it has of other modules, the extension points other modules
// implement, the outbound clients), is in that package's ports.go
// (docs/architecture.md, "Ports").
func TestPortsLiveInPortsGo(t *testing.T) {
	fset := token.NewFileSet()
	found := 0
	for _, fl := range parseCore(t, fset) {
		interfacesOf(fl.f, func(ts *ast.TypeSpec) {
			if notPorts[fl.pkg+"."+ts.Name.Name] {
				return
			}
			found++
			if filepath.Base(fl.path) != "ports.go" {
				t.Errorf("%s: port %s is declared outside %s/ports.go", fset.Position(ts.Pos()), ts.Name.Name, fl.pkg)
			}
		})
	}
	if found == 0 {
		t.Fatal("no port found under core/: the walk is broken")
	}
}

// TestOneAssertionListPerBackend holds the compile-time checks that a
// backend implements a port of qms (var _ turns.Repository = (*Turns)(nil))
// to its package's assertions.go: what the backend is, read in one place.
// Checks against a library's interfaces (pgx.Tx, driver.Valuer) stay
// beside their types.
func TestOneAssertionListPerBackend(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, backend := range []string{"adapters/memory", "adapters/postgres"} {
		fset := token.NewFileSet()
		dir := filepath.Join(root, filepath.FromSlash(backend))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		listed := 0
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			qms := map[string]bool{} // local names of the module's imports
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(p, "github.com/qms-dev/qms/") {
					continue
				}
				local := p[strings.LastIndex(p, "/")+1:]
				if imp.Name != nil {
					local = imp.Name.Name
				}
				qms[local] = true
			}
			ast.Inspect(f, func(n ast.Node) bool {
				vs, ok := n.(*ast.ValueSpec)
				if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "_" {
					return true
				}
				sel, ok := vs.Type.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); !ok || !qms[pkg.Name] {
					return true
				}
				if name != "assertions.go" {
					t.Errorf("%s: the assertion of %s.%s belongs in %s/assertions.go", fset.Position(vs.Pos()), sel.X, sel.Sel.Name, backend)
				} else {
					listed++
				}
				return true
			})
		}
		if listed == 0 {
			t.Errorf("%s/assertions.go asserts no port: the walk is broken", backend)
		}
	}
}

// TestWiringIsCode holds the wiring to what go-to-definition can follow:
// no provider made by reflection (reflect.MakeFunc) where the application
// is put together, and the adapter sets written as keyed literals, one
// port a line (adapters/adapterset).
func TestWiringIsCode(t *testing.T) {
	root := filepath.Join("..", "..")
	sets := 0
	for _, dir := range []string{"bootstrap", "modules", "adapters"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "reflect" && n.Sel.Name == "MakeFunc" {
						t.Errorf("%s: a provider made by reflect.MakeFunc: write it as code", fset.Position(n.Pos()))
					}
				case *ast.CompositeLit:
					if id, ok := n.Type.(*ast.Ident); ok && id.Name == "Set" && f.Name.Name == "adapterset" && len(n.Elts) > 0 {
						sets++
						for _, e := range n.Elts {
							if _, keyed := e.(*ast.KeyValueExpr); !keyed {
								t.Errorf("%s: the adapter set is a positional literal: key each port", fset.Position(n.Pos()))
								break
							}
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if sets < 2 {
		t.Fatalf("found %d adapter-set literals, want one per backend: the walk is broken", sets)
	}
}
