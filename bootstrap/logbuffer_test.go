package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
)

// lockedBuffer records every write to it, each as one call.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lockedBuffer) Writes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

// eventually polls cond until it holds or a generous bound passes; the
// bound only keeps a broken flush from hanging the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}

func TestLogBufferHoldsWritesUntilAFlush(t *testing.T) {
	var out lockedBuffer
	b := newLogBuffer(&out, time.Hour, 1<<20)
	defer b.Close()
	for i := range 100 {
		fmt.Fprintf(b, "line %d\n", i)
	}
	if out.Writes() != 0 {
		t.Fatalf("%d writes before any flush", out.Writes())
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.Writes() != 1 || strings.Count(out.String(), "\n") != 100 {
		t.Fatalf("after a flush: %d writes, %q", out.Writes(), out.String())
	}
	if err := b.Flush(); err != nil || out.Writes() != 1 {
		t.Fatalf("an empty flush wrote: %d writes, %v", out.Writes(), err)
	}
}

func TestLogBufferFlushesOnItsTimer(t *testing.T) {
	var out lockedBuffer
	b := newLogBuffer(&out, 10*time.Millisecond, 1<<20)
	defer b.Close()
	fmt.Fprintln(b, "first")
	eventually(t, "the timer flushed the first line", func() bool { return out.String() == "first\n" })
	// The timer re-arms for the lines after a flush.
	fmt.Fprintln(b, "second")
	eventually(t, "the timer flushed the second line", func() bool { return out.String() == "first\nsecond\n" })
}

func TestLogBufferFlushesWhenFull(t *testing.T) {
	var out lockedBuffer
	b := newLogBuffer(&out, time.Hour, 64)
	defer b.Close()
	line := strings.Repeat("x", 40) + "\n"
	fmt.Fprint(b, line)
	if out.Writes() != 0 {
		t.Fatal("flushed below the size")
	}
	fmt.Fprint(b, line) // 82 bytes >= 64
	if out.String() != line+line {
		t.Fatalf("at the size: %q", out.String())
	}
}

// TestLogBufferKeepsEveryLineWholeAndInOrder writes from many goroutines
// at once, with the timer and the size flushing concurrently: every line
// comes out exactly once, whole, and each goroutine's lines in the order
// it wrote them.
func TestLogBufferKeepsEveryLineWholeAndInOrder(t *testing.T) {
	var out lockedBuffer
	b := newLogBuffer(&out, time.Millisecond, 512)
	const writers, lines = 8, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				fmt.Fprintf(b, "w%d %d %s\n", w, i, strings.Repeat("y", i%50))
			}
		}()
	}
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var w, i int
		if _, err := fmt.Sscanf(l, "w%d %d", &w, &i); err != nil || w < 0 || w >= writers {
			t.Fatalf("torn line %q", l)
		}
		if want := fmt.Sprintf("w%d %d %s", w, i, strings.Repeat("y", i%50)); l != want || i != next[w] {
			t.Fatalf("writer %d: line %q where line %d was due", w, l, next[w])
		}
		next[w]++
	}
	for w, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d lines, want %d", w, n, lines)
		}
	}
	if out.Writes() >= writers*lines/10 {
		t.Errorf("%d writes for %d lines: not buffered", out.Writes(), writers*lines)
	}
}

func TestLogBufferWritesThroughAfterClose(t *testing.T) {
	var out lockedBuffer
	b := newLogBuffer(&out, time.Hour, 1<<20)
	fmt.Fprintln(b, "before")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "before\n" {
		t.Fatalf("close did not flush: %q", out.String())
	}
	fmt.Fprintln(b, "after")
	if out.String() != "before\nafter\n" {
		t.Fatalf("a write after close waits: %q", out.String())
	}
}

func TestErrorRecordsFlushAtOnce(t *testing.T) {
	var out lockedBuffer
	b := newLogBuffer(&out, time.Hour, 1<<20)
	defer b.Close()
	log := slog.New(flushOnError{slog.NewJSONHandler(b, nil), b}).With("component", "test")
	log.Info("quiet")
	if out.Writes() != 0 {
		t.Fatal("an info line went out alone")
	}
	log.Error("loud")
	s := out.String()
	if !strings.Contains(s, `"msg":"quiet"`) || !strings.Contains(s, `"msg":"loud"`) || !strings.Contains(s, `"component":"test"`) {
		t.Fatalf("after an error: %q", s)
	}
}

// TestStopFlushesTheLog runs a memory-mode process on the process's own
// logger and buffer: the access line of a request is out once the
// application has stopped, however long the flush interval.
func TestStopFlushesTheLog(t *testing.T) {
	defer func(d time.Duration) { logFlushInterval = d }(logFlushInterval)
	logFlushInterval = time.Hour
	cfg, err := config.Load("", []string{"QMS_STORAGE=memory", "QMS_HTTP_ADDR=127.0.0.1:0", "QMS_BOOTSTRAP_DEMO=false"})
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	app, srv := New(cfg, Options{LogOutput: &out, Stdout: io.Discard})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + srv.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, `"msg":"http request"`) || !strings.Contains(s, `"route":"/healthz"`) {
		t.Fatalf("the access line is not out after stop:\n%s", s)
	}
}
