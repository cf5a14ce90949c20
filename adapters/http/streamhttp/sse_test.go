package streamhttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/adapters/http/streamhttp"
	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/test/testkit"
)

type rig struct {
	t     *testing.T
	store *memory.Store
	bus   *events.Bus
	hub   *stream.Hub
	url   string
}

// newRig serves one stream at /stream, configured by cfg, on loopback.
func newRig(t *testing.T, opts stream.Options, cfg streamhttp.SSE) *rig {
	t.Helper()
	set, store := testkit.MemorySet(t, platform.SystemClock{})
	bus := testkit.Bus(set) // the memory log copies each event, in its transaction
	hub := stream.NewHub(set.StreamLog, platform.SystemClock{}, opts)
	ctx, cancel := context.WithCancel(context.Background())
	go hub.Listen(ctx, set.StreamNotifier)

	app := httpx.NewApp(httpx.AppConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	app.Get("/stream", func(c *fiber.Ctx) error {
		sub, err := hub.Subscribe(c.UserContext(), stream.Request{AccountID: "acc_1",
			Filter: stream.Filter{Scopes: accounts.NewScopeSet(accounts.AllScopes)}, LastEventID: c.Get("Last-Event-ID")})
		if err != nil {
			return err
		}
		return streamhttp.Serve(c, sub, cfg)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { hub.Close(); cancel(); _ = app.Shutdown() })
	return &rig{t: t, store: store, bus: bus, hub: hub, url: "http://" + ln.Addr().String() + "/stream"}
}

func (r *rig) emit(n int) {
	r.t.Helper()
	err := r.store.Do(context.Background(), func(ctx context.Context) error {
		for i := 0; i < n; i++ {
			if err := r.bus.Emit(ctx, platform.Event{AccountID: "acc_1", Name: platform.EventName[turns.TurnCreated](), OccurredAt: time.Now(),
				Data: json.RawMessage(`{"turnId":"turn_1"}`)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// open connects and reads the stream line by line into a channel.
func (r *rig) open(headers map[string]string) (<-chan string, *http.Response) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { resp.Body.Close() })
	out := make(chan string, 4096)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	return out, resp
}

// waitFor reads lines until one starts with prefix, and returns the lines
// read before it.
func waitFor(t *testing.T, lines <-chan string, prefix string, d time.Duration) []string {
	t.Helper()
	var before []string
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended before %q; read %q", prefix, before)
			}
			if strings.HasPrefix(l, prefix) {
				return before
			}
			before = append(before, l)
		case <-timer.C:
			t.Fatalf("no %q within %v; read %q", prefix, d, before)
		}
	}
}

func TestStreamHeadersRetryAndHeartbeats(t *testing.T) {
	r := newRig(t, stream.Options{}, streamhttp.SSE{Heartbeat: 50 * time.Millisecond, Retry: 1500 * time.Millisecond})
	lines, resp := r.open(nil)
	for k, want := range map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache, no-store", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	waitFor(t, lines, "retry: 1500", time.Second)
	waitFor(t, lines, ": heartbeat", time.Second)
	waitFor(t, lines, ": heartbeat", time.Second)
	r.emit(1)
	waitFor(t, lines, "id: evt_", time.Second)
	waitFor(t, lines, "event: turn.created", time.Second)
	waitFor(t, lines, `data: {"id":"evt_`, time.Second)
}

// TestSlowClientIsCutOffWithAnOverflowEvent: while the writer is stuck (a
// client that does not read), the events pile up to the buffer, the
// subscription is cut, and the client gets a final overflow event naming
// the last event it received.
func TestSlowClientIsCutOffWithAnOverflowEvent(t *testing.T) {
	stuck := make(chan struct{})
	first := true
	r := newRig(t, stream.Options{Buffer: 3}, streamhttp.SSE{Message: func(e stream.Entry) (string, any, error) {
		if first {
			first = false
			<-stuck
		}
		return e.Event.Name, stream.MessageOf(e.Event), nil
	}})
	lines, _ := r.open(nil)
	waitFor(t, lines, ": connected", time.Second)
	r.emit(1)
	time.Sleep(50 * time.Millisecond) // the writer now holds the first event
	r.emit(10)
	deadline := time.Now().Add(2 * time.Second)
	for r.hub.Subscribers() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := r.hub.Subscribers(); n != 0 {
		t.Fatalf("the slow subscriber is still subscribed (%d)", n)
	}
	close(stuck)
	before := waitFor(t, lines, "event: overflow", 2*time.Second)
	var ids int
	for _, l := range before {
		if strings.HasPrefix(l, "id: ") {
			ids++
		}
	}
	if ids != 1 {
		t.Fatalf("%d events before the overflow, want the one that was being written", ids)
	}
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "data: ") || !strings.Contains(l, `"lastEventId":"evt_`) {
			t.Fatalf("overflow data line %q", l)
		}
	case <-time.After(time.Second):
		t.Fatal("no overflow data")
	}
}

func TestShutdownEndsStreamsWithAnEvent(t *testing.T) {
	r := newRig(t, stream.Options{}, streamhttp.SSE{})
	lines, _ := r.open(nil)
	waitFor(t, lines, ": connected", time.Second)
	r.hub.Close()
	waitFor(t, lines, "event: shutdown", time.Second)
	for range lines {
	}
}

func TestGapIsAnnouncedFirst(t *testing.T) {
	r := newRig(t, stream.Options{}, streamhttp.SSE{})
	lines, _ := r.open(map[string]string{"Last-Event-ID": "evt_unknown"})
	before := waitFor(t, lines, "event: gap", time.Second)
	for _, l := range before {
		if strings.HasPrefix(l, "id:") {
			t.Fatalf("an event before the gap: %q", before)
		}
	}
}
