package events_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/turns"
)

// members names the members of the spec (section 6 and "Event data
// carries turnId, queueRunId and displayCode for turns") each event's data
// must carry, whatever else it holds.
func members(name string) []string {
	if turns.IsEvent(name) {
		return []string{"turnId", "queueRunId", "displayCode"}
	}
	return []string{"queueRunId"}
}

// Every registered payload's JSON has the members the spec names, and a
// turn event's data decodes into turns.TurnFields (the turn lifecycle's
// payloads embed it; help and SLA events carry its ids).
func TestEveryEventCarriesWhatTheSpecNames(t *testing.T) {
	for _, p := range events.Payloads() {
		name := p.EventName()
		e, err := platform.NewEvent("acc_1", p, platform.SystemClock{}.Now())
		if err != nil {
			t.Fatal(err)
		}
		if e.Name != name {
			t.Errorf("NewEvent named %T %q, its EventName is %q", p, e.Name, name)
		}
		var m map[string]any
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range members(name) {
			if _, ok := m[k]; !ok {
				t.Errorf("%s (%T) data lacks %s: %s", name, p, k, e.Data)
			}
		}
		if turns.IsEvent(name) {
			var f turns.TurnFields
			if err := e.Decode(&f); err != nil {
				t.Errorf("%s: %T does not decode into turns.TurnFields: %v", name, p, err)
			}
		}
	}
}

var eventName = regexp.MustCompile(`^[a-z]+\.[a-z_]+$`)

// Names are unique and shaped subject.happening (the subject is what
// events.OfSubjects selects on).
func TestNamesAreUniqueAndShaped(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range events.Names() {
		if seen[n] {
			t.Errorf("%s is registered twice", n)
		}
		seen[n] = true
		if !eventName.MatchString(n) {
			t.Errorf("%s is not shaped subject.happening", n)
		}
		if !events.IsName(n) {
			t.Errorf("IsName(%s) is false", n)
		}
	}
	if events.IsName("turn.nothing") {
		t.Error("IsName accepts an unregistered name")
	}
	// OfSubjects selects by the subject alone, in the registry's order:
	// derived here from Names, so a new event edits no list in this test.
	var queue, turnAndQueue []string
	for _, n := range events.Names() {
		subject, _, _ := strings.Cut(n, ".")
		if subject == "queue" {
			queue = append(queue, n)
		}
		if subject == "queue" || subject == "turn" {
			turnAndQueue = append(turnAndQueue, n)
		}
	}
	if got := events.OfSubjects("queue"); len(got) < 2 || !slices.Equal(got, queue) {
		t.Errorf("OfSubjects(queue) = %v, want %v", got, queue)
	}
	if got := events.OfSubjects("turn", "queue"); !slices.Equal(got, turnAndQueue) {
		t.Errorf("OfSubjects(turn, queue) = %v, want %v", got, turnAndQueue)
	}
	if got := events.OfSubjects("tur"); len(got) != 0 {
		t.Errorf("OfSubjects(tur) = %v: a subject is the whole name up to its dot", got)
	}
}

// A type of a core package with an EventName method is an event payload:
// it must be in the registry, or subscribers, the OpenAPI enum and the
// docs would not know the event exists.
func TestEveryPayloadIsRegistered(t *testing.T) {
	registered := map[string]bool{}
	for _, p := range append(events.Payloads(), events.InternalPayloads()...) {
		ty := reflect.TypeOf(p)
		registered[strings.TrimPrefix(ty.PkgPath(), "github.com/qms-dev/qms/")+"."+ty.Name()] = true
	}
	declared := map[string]bool{}
	fset := token.NewFileSet()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Join(repo, "core"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repo, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "EventName" || len(fn.Recv.List) != 1 {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				declared[filepath.ToSlash(rel)+"."+id.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) == 0 {
		t.Fatal("found no payload type under core/: the walk is broken")
	}
	for ty := range declared {
		if !registered[ty] {
			t.Errorf("%s has an EventName method but is not in core/events' registry", ty)
		}
	}
	for ty := range registered {
		if !declared[ty] {
			t.Errorf("%s is registered but no EventName method was found for it", ty)
		}
	}
}
