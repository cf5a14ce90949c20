package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMFinishesWithinTheShutdownTimeout runs `qms serve` in this
// process, opens connections that would hold it for a minute (headers and
// bodies sent a byte at a time, idle keep-alive connections, timeouts set
// to a minute), sends SIGTERM, and expects serve to return without error
// within the shutdown timeout.
func TestSIGTERMFinishesWithinTheShutdownTimeout(t *testing.T) {
	const shutdown = 3 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for k, v := range map[string]string{
		"QMS_STORAGE":                  "memory",
		"QMS_HTTP_ADDR":                addr,
		"QMS_HTTP_SHUTDOWN_TIMEOUT":    shutdown.String(),
		"QMS_HTTP_READ_HEADER_TIMEOUT": "1m",
		"QMS_HTTP_READ_TIMEOUT":        "1m",
		"QMS_HTTP_IDLE_TIMEOUT":        "1m",
		"QMS_LOG_LEVEL":                "error",
		"QMS_BOOTSTRAP_DEMO":           "false",
	} {
		t.Setenv(k, v)
	}
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"serve"}, io.Discard, &stderr) }()
	waitHealthy(t, "http://"+addr+"/healthz", done)
	var out bytes.Buffer
	if code := run([]string{"health"}, &out, &stderr); code != 0 || !bytes.Contains(out.Bytes(), []byte(`"ready"`)) {
		t.Errorf("qms health: exit %d, %s %s", code, out.String(), stderr.String())
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	hold := func(first string, trickle bool) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprint(c, first)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for trickle {
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			_, _ = io.Copy(io.Discard, c)
		}()
	}
	for range 50 {
		hold("GET /healthz HTTP/1.1\r\nHost: qms\r\nX-Slow: ", true)
		hold("POST /api/v1/entities HTTP/1.1\r\nHost: qms\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", true)
		hold("GET /healthz HTTP/1.1\r\nHost: qms\r\n\r\n", false) // then idle
	}
	time.Sleep(300 * time.Millisecond)

	start := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		took := time.Since(start)
		if code != 0 {
			t.Errorf("qms serve exited %d after SIGTERM: %s", code, stderr.String())
		}
		if took > shutdown {
			t.Errorf("SIGTERM took %v with 150 slow and idle connections open; the shutdown timeout is %v", took, shutdown)
		}
		t.Logf("SIGTERM with 150 slow and idle connections open: stopped in %v (shutdown timeout %v)", took.Round(10*time.Millisecond), shutdown)
	case <-time.After(3 * shutdown):
		t.Fatalf("qms serve still running %v after SIGTERM", 3*shutdown)
	}
}

func waitHealthy(t *testing.T, url string, done <-chan int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case code := <-done:
			t.Fatalf("qms serve exited %d at start-up", code)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer within 30s", url)
}
