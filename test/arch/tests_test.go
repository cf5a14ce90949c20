package arch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxContractFunc is the longest a function of the contract suites may
// be: a suite past it is split into parts a reader can hold (runTurns1,
// runTurns2, ...), as the issue that made Exercise asked.
const maxContractFunc = 150

// TestContractFunctionsAreShort holds every function of test/contract to
// maxContractFunc lines, its subtests' closures included.
func TestContractFunctionsAreShort(t *testing.T) {
	dir := filepath.Join("..", "contract")
	fset := token.NewFileSet()
	pkgs := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkgs++
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if lines > maxContractFunc {
				t.Errorf("%s: %s is %d lines, over %d: split it into parts", fset.Position(fd.Pos()), fd.Name.Name, lines, maxContractFunc)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pkgs == 0 {
		t.Fatal("no file found under test/contract: the walk is broken")
	}
}

// fieldsReaders are the files that may read the "fields" member of an
// error's details: platform.FieldErrors in the process, and the SDK's
// client.Error.FieldErrors on the wire (which test/apptest and the HTTP
// adapter's tests read through). Everything else asks them.
var fieldsReaders = map[string]bool{
	"core/platform/errors.go": true,
	"client/client.go":        true,
}

// readsFields is an index of a details map by "fields": a reader by hand.
var readsFields = regexp.MustCompile(`\[\s*"fields"\s*\]`)

// TestOneReaderOfFieldErrors holds the reading of a VALIDATION_ERROR's
// fields to the two accessors of fieldsReaders.
func TestOneReaderOfFieldErrors(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if readsFields.Match(b) && !fieldsReaders[filepath.ToSlash(rel)] {
			t.Errorf(`%s reads details.fields by hand: use platform.FieldErrors (in the process) or the SDK's client.Error.FieldErrors (apptest.Response.FieldErrors on the wire)`, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files found: the walk is broken", files)
	}
}
