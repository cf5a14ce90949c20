package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
)

// TestREADMEGoSDKExample runs the README's Go SDK example as a newcomer
// would paste it, in a module of its own, against a running qms: it must
// finish, and print what its comments promise.
func TestREADMEGoSDKExample(t *testing.T) {
	t.Parallel()
	goTool := lookTool(t, "go")
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	var program []byte
	for _, b := range blocks {
		if bytes.Contains(b[1], []byte("package main")) && bytes.Contains(b[1], []byte("qms-dev/qms/client")) {
			program = b[1]
		}
	}
	if program == nil {
		t.Fatal("the README has no Go SDK example (a go block with package main)")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"main.go": program,
		"go.mod":  []byte("module readme.example\n\ngo 1.26\n\nrequire github.com/qms-dev/qms v0.0.0\n\nreplace github.com/qms-dev/qms => " + repo + "\n"),
		"go.sum":  sum,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	a := apptest.Memory(t)
	// The example calls http://localhost:8080; this qms is elsewhere.
	program = bytes.ReplaceAll(program, []byte(`"http://localhost:8080"`), []byte(`"`+a.BaseURL+`"`))
	if err := os.WriteFile(filepath.Join(dir, "main.go"), program, 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(goTool, "build", "-o", "example", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build the README example: %v\n%s", err, out)
	}
	const limit = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "example"))
	cmd.Env = append(os.Environ(), "QMS_API_KEY="+a.Key)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the example did not finish within %v:\n%s", limit, out)
	}
	if err != nil {
		t.Fatalf("the README example: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"turn.created 1\n", "turn.called 1\n", "404 NOT_FOUND req_"} {
		if !strings.Contains(got, want) {
			t.Errorf("the example printed\n%s\nwithout %q", got, want)
		}
	}
	t.Logf("README example:\n%s", got)
}
