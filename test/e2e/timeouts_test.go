package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// TestSlowAndIdleConnectionsAreClosedInTime opens connections that send
// their headers or their body a byte at a time, connections that stay idle
// after a request, and one that does not read its response, and sees each
// closed by its timeout, while a normal client is served all along and an
// event stream outlives the write timeout.
func TestSlowAndIdleConnectionsAreClosedInTime(t *testing.T) {
	t.Parallel()
	const (
		readHeader = 1 * time.Second
		read       = 2 * time.Second
		write      = 1 * time.Second
		idle       = 1500 * time.Millisecond
		slack      = 1 * time.Second // scheduling on a loaded machine
		perKind    = 20
	)
	a := apptest.Memory(t, whNoLimit, apptest.WithConfig(func(c *config.Config) {
		c.HTTP.ReadHeaderTimeout, c.HTTP.ReadTimeout, c.HTTP.WriteTimeout, c.HTTP.IdleTimeout = readHeader, read, write, idle
	}))
	addr := strings.TrimPrefix(a.BaseURL, "http://")

	// The normal client: a request every 50 ms on fresh connections.
	stopNormal := make(chan struct{})
	normalDone := make(chan error, 1)
	var served int
	var slowest time.Duration
	go func() {
		cl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for {
			select {
			case <-stopNormal:
				normalDone <- nil
				return
			case <-time.After(50 * time.Millisecond):
			}
			start := time.Now()
			resp, err := cl.Get(a.BaseURL + "/healthz")
			if err != nil {
				normalDone <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				normalDone <- fmt.Errorf("/healthz: %d", resp.StatusCode)
				return
			}
			served++
			slowest = max(slowest, time.Since(start))
		}
	}()

	type kind struct {
		name  string
		limit time.Duration // closed by then, after the connection opened
		open  func(t *testing.T) net.Conn
		trick func(c net.Conn) // keeps the connection busy, until it fails
	}
	dial := func(t *testing.T) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	trickle := func(c net.Conn) {
		for {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	kinds := []kind{
		{"headers a byte at a time", readHeader + slack, func(t *testing.T) net.Conn {
			c := dial(t)
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: qms\r\nX-Slow: ")
			return c
		}, trickle},
		{"body a byte at a time", readHeader + read + slack, func(t *testing.T) net.Conn {
			c := dial(t)
			fmt.Fprintf(c, "POST /api/v1/entities HTTP/1.1\r\nHost: qms\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
			return c
		}, trickle},
		{"idle after a request", idle + slack, func(t *testing.T) net.Conn {
			c := dial(t)
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: qms\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return c
		}, nil},
		{"idle before any request", readHeader + slack, dial, nil},
	}
	var wg sync.WaitGroup
	results := make([][]time.Duration, len(kinds))
	var mu sync.Mutex
	for i, k := range kinds {
		for range perKind {
			c := k.open(t)
			opened := time.Now()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if k.trick != nil {
					go k.trick(c)
				}
				closedAt := waitClosed(c, 3*k.limit)
				mu.Lock()
				results[i] = append(results[i], closedAt.Sub(opened))
				mu.Unlock()
			}()
		}
	}

	// A client that asks for large answers and does not read them: the
	// write timeout ends it.
	doc := a.Do(http.MethodGet, "/api/v1/openapi.json", nil, nil)
	sr := openSlowReader(t, addr, len(doc.Body))

	// An event stream stays open past the write timeout.
	stream := dial(t)
	fmt.Fprintf(stream, "GET /api/v1/events/stream HTTP/1.1\r\nHost: qms\r\nAccept: text/event-stream\r\nX-API-Key: %s\r\n\r\n", a.Key)
	streamResp, err := http.ReadResponse(bufio.NewReader(stream), nil)
	if err != nil || streamResp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %v %v", err, streamResp)
	}

	wg.Wait()
	for i, k := range kinds {
		var worst time.Duration
		for _, d := range results[i] {
			worst = max(worst, d)
		}
		t.Logf("%-26s %d connections, all closed within %v (limit %v)", k.name+":", len(results[i]), worst.Round(10*time.Millisecond), k.limit)
		if worst > k.limit {
			t.Errorf("%s: a connection stayed open %v, limit %v", k.name, worst, k.limit)
		}
	}
	time.Sleep(write + slack) // the connections above took longer than that already; to be plain
	if n, all := sr(); n >= all {
		t.Errorf("the server wrote all %d bytes to a client that did not read for %v", all, write+slack)
	} else {
		t.Logf("%-26s the server gave up after writing %d of %d bytes", "not reading the answers:", n, all)
	}

	// Still open after all that (> write timeout): read times out, no EOF.
	_ = stream.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := streamResp.Body.Read(make([]byte, 1024)); err != nil && !isTimeout(err) {
		t.Errorf("the event stream was cut: %v", err)
	}

	close(stopNormal)
	if err := <-normalDone; err != nil {
		t.Fatalf("the normal client was not served: %v", err)
	}
	t.Logf("normal client: %d requests served meanwhile, the slowest in %v", served, slowest.Round(time.Millisecond))
	if served < 20 {
		t.Errorf("the normal client got only %d answers", served)
	}
}

// waitClosed reads c until the server closes it, up to limit, and tells
// when that was.
func waitClosed(c net.Conn, limit time.Duration) time.Time {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, _ = io.Copy(io.Discard, c)
	return time.Now()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// openSlowReader asks for the OpenAPI document 256 times over (some 45 MB,
// more than the kernel buffers of both ends hold), pipelined, and reads
// nothing; the
// returned function, called after the write timeout, reads what there is
// and tells how much of the answers the server wrote before it gave up.
// A server without a write timeout waits for the reader forever, and then
// writes every byte.
func openSlowReader(t *testing.T, addr string, docSize int) func() (read, all int64) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	const answers = 256
	var req strings.Builder
	for range answers {
		req.WriteString("GET /api/v1/openapi.json HTTP/1.1\r\nHost: qms\r\n\r\n")
	}
	if _, err := io.WriteString(c, req.String()); err != nil {
		t.Fatal(err)
	}
	return func() (int64, int64) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := io.Copy(io.Discard, c)
		return n, int64(answers * docSize)
	}
}
