package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestREADMEWalkthrough does what the README tells a newcomer to do: it
// starts `qms serve` in memory mode, takes the `export QMS=... KEY=...` line
// the banner prints, and runs every sh block of the README's walkthrough
// (between the walkthrough:start and walkthrough:end markers) in order, in
// one bash, with that line in place of the README's placeholder. Each block
// stops at the first refused call (curl --fail-with-body under set -e), so a
// README that drifts from the product fails here.
func TestREADMEWalkthrough(t *testing.T) {
	bash := lookTool(t, "bash")
	lookTool(t, "curl")
	lookTool(t, "jq")

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, placeholder := walkthroughScript(t, string(readme))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("QMS_STORAGE", "memory")
	t.Setenv("QMS_HTTP_ADDR", addr)
	t.Setenv("QMS_LOG_LEVEL", "error")
	t.Setenv("QMS_ADMIN_TOKEN", "")

	var stdout lockedBuffer
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"serve"}, &stdout, &stderr) }()
	waitHealthy(t, "http://"+addr+"/healthz", done)
	defer func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Error(err)
		}
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("qms serve still running 20s after SIGTERM")
		}
	}()

	exportLine := regexp.MustCompile(`(?m)^\s*(export QMS=\S+ KEY=qms_\w+)\s*$`)
	var export string
	for deadline := time.Now().Add(10 * time.Second); export == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := exportLine.FindStringSubmatch(stdout.String()); m != nil {
			export = m[1]
		}
	}
	if export == "" {
		t.Fatalf("the banner has no `export QMS=... KEY=...` line to paste:\n%s", stdout.String())
	}
	if want := "export QMS=http://" + addr + " "; !strings.HasPrefix(export, want) {
		t.Errorf("the banner's export line %q does not name this server (%s)", export, want)
	}
	script = strings.Replace(script, placeholder, export, 1)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-euo", "pipefail", "-c", script)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	t.Logf("the README's walkthrough printed:\n%s", out)
	if err != nil {
		t.Fatalf("the README's walkthrough stopped: %v", err)
	}
	for _, want := range []string{
		`"stations":["Window 1","Window 2"]`,
		"/display/qmsd_",
		`{"displayCode":"A002","position":2}`,
		"true\n", // the repeated idempotency key gave the same turn
		`"range":null`,
		"/ticket/qmst_",
		`{"displayCode":"A001","status":"CALLED","station":"Window 1"}`,
		"IN_SERVICE\n",
		"COMPLETED\n",
		`{"displayCode":"A002","position":1}`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %q", want)
		}
	}
}

// walkthroughScript joins the README's walkthrough sh blocks into one
// script and returns it with the placeholder export line it must replace.
func walkthroughScript(t *testing.T, readme string) (script, placeholder string) {
	t.Helper()
	start := strings.Index(readme, "<!-- walkthrough:start")
	end := strings.Index(readme, "<!-- walkthrough:end")
	if start < 0 || end < start {
		t.Fatal("the README has no walkthrough between <!-- walkthrough:start and <!-- walkthrough:end markers")
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme[start:end], -1)
	if len(blocks) < 5 {
		t.Fatalf("the README's walkthrough has %d sh blocks; want the whole visit", len(blocks))
	}
	var b strings.Builder
	for _, m := range blocks {
		b.WriteString(m[1])
		b.WriteString("\n")
	}
	script = b.String()
	placeholder = regexp.MustCompile(`(?m)^export QMS=\S+ KEY=\S+`).FindString(script)
	if placeholder == "" {
		t.Fatal("the walkthrough's first block does not set QMS and KEY with an export line")
	}
	return script, placeholder
}

func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required: %v", name, err)
		}
		t.Skipf("%s is not installed (required when CI=true)", name)
	}
	return p
}

// lockedBuffer is a bytes.Buffer safe for the server's writes and the
// test's reads at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
