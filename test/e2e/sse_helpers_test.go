package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseFrame is one Server-Sent Event as a client reads it off the wire.
type sseFrame struct {
	ID, Event, Data string
	Comment         bool // a comment line (": heartbeat")
}

// sseConn is an open event stream, read raw: the tests check the wire
// format itself, not a client library's view of it.
type sseConn struct {
	t      *testing.T
	resp   *http.Response
	frames chan sseFrame
	cancel context.CancelFunc
}

// openSSE opens url with headers; it fails the test unless the answer is
// 200 text/event-stream. Close it, or let the test's cleanup do it.
func openSSE(t *testing.T, url string, headers map[string]string) *sseConn {
	t.Helper()
	resp, cancel := getSSE(t, url, headers)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		cancel()
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	c := &sseConn{t: t, resp: resp, frames: make(chan sseFrame, 1024), cancel: cancel}
	go c.read()
	t.Cleanup(c.Close)
	return c
}

// getSSE sends the request and returns the response, whatever its status.
func getSSE(t *testing.T, url string, headers map[string]string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp, func() { cancel(); resp.Body.Close() }
}

func (c *sseConn) read() {
	defer close(c.frames)
	sc := bufio.NewScanner(c.resp.Body)
	var f sseFrame
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if f.Event != "" || len(data) > 0 || f.ID != "" {
				f.Data = strings.Join(data, "\n")
				c.frames <- f
			}
			f, data = sseFrame{}, nil
		case strings.HasPrefix(line, ":"):
			c.frames <- sseFrame{Comment: true, Data: strings.TrimSpace(line[1:])}
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				f.ID = value
			case "event":
				f.Event = value
			case "data":
				data = append(data, value)
			}
		}
	}
}

// Close drops the connection.
func (c *sseConn) Close() { c.cancel() }

// next returns the next event (skipping comments), failing after d.
func (c *sseConn) next(d time.Duration) sseFrame {
	c.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				c.t.Fatal("the stream ended")
			}
			if f.Comment {
				continue
			}
			return f
		case <-timer.C:
			c.t.Fatalf("no event within %v", d)
		}
	}
}

// none checks that no event arrives within d.
func (c *sseConn) none(d time.Duration) {
	c.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return
			}
			if !f.Comment {
				c.t.Fatalf("unexpected event %s %s %s", f.ID, f.Event, f.Data)
			}
		case <-timer.C:
			return
		}
	}
}

// streamMessage is the data of a domain event on the stream: the webhook
// body with the event's id.
type streamMessage struct {
	ID        string         `json:"id"`
	Event     string         `json:"event"`
	Data      map[string]any `json:"data"`
	CreatedAt string         `json:"createdAt"`
}

// message decodes a domain event and checks that the frame and its data
// agree: SSE id = data.id, SSE event = data.event, createdAt ISO 8601 UTC
// with milliseconds, and no member beyond the webhook body's.
func (c *sseConn) message(d time.Duration) streamMessage {
	c.t.Helper()
	f := c.next(d)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(f.Data), &raw); err != nil {
		c.t.Fatalf("event %s: data is not JSON: %s", f.Event, f.Data)
	}
	if len(raw) != 4 {
		c.t.Fatalf("event data has %d members, want id, event, data, createdAt: %s", len(raw), f.Data)
	}
	var m streamMessage
	_ = json.Unmarshal([]byte(f.Data), &m)
	if m.ID == "" || f.ID != m.ID || f.Event != m.Event {
		c.t.Fatalf("frame id %q event %q, data id %q event %q", f.ID, f.Event, m.ID, m.Event)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", m.CreatedAt); err != nil {
		c.t.Fatalf("createdAt %q: %v", m.CreatedAt, err)
	}
	return m
}
