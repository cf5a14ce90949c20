package httpx

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestEventStreamsAreExemptFromTheWriteTimeout(t *testing.T) {
	for _, tt := range []struct {
		uri, accept string
		stream      bool
	}{
		{"/api/v1/events/stream", "text/event-stream", true},
		{"/api/v1/events/stream?queueId=q", "", true},
		{"/display/qmsd_x/events", "", true},
		{"/api/v1/queues", "Text/Event-Stream", true},
		{"/api/v1/queues", "application/json", false},
		{"/display/qmsd_x/board", "text/html", false},
		{"/api/v1/openapi.json?x=/events", "", false},
	} {
		var h fasthttp.RequestHeader
		h.SetRequestURI(tt.uri)
		if tt.accept != "" {
			h.Set("Accept", tt.accept)
		}
		if got := IsEventStream(&h); got != tt.stream {
			t.Errorf("%s (Accept %q): stream %v, want %v", tt.uri, tt.accept, got, tt.stream)
		}
	}
	s := &fasthttp.Server{}
	applyTimeouts(s, Timeouts{ReadHeader: 1, Read: 2, Write: 3, Idle: 4})
	if s.ReadTimeout != 1 || s.IdleTimeout != 4 || s.WriteTimeout != 0 {
		t.Fatalf("server: read %v idle %v write %v", s.ReadTimeout, s.IdleTimeout, s.WriteTimeout)
	}
	var plain, chunked, bodyless, stream fasthttp.RequestHeader
	plain.SetRequestURI("/api/v1/queues")
	plain.SetContentLength(10)
	chunked.SetRequestURI("/api/v1/queues")
	chunked.SetContentLength(-1)
	bodyless.SetRequestURI("/api/v1/queues")
	stream.SetRequestURI("/api/v1/events/stream")
	if rc := s.HeaderReceived(&plain); rc.ReadTimeout != 2 || rc.WriteTimeout != 3 {
		t.Errorf("a request with a body: %+v", rc)
	}
	if rc := s.HeaderReceived(&chunked); rc.ReadTimeout != 2 || rc.WriteTimeout != 3 {
		t.Errorf("a chunked request: %+v", rc)
	}
	// Nothing more to read: the header's deadline stays (no new one).
	if rc := s.HeaderReceived(&bodyless); rc.ReadTimeout != 0 || rc.WriteTimeout != 3 {
		t.Errorf("a request without a body: %+v", rc)
	}
	if rc := s.HeaderReceived(&stream); rc.ReadTimeout != 0 || rc.WriteTimeout != 0 {
		t.Errorf("an event stream: %+v", rc)
	}
}

// TestContainsFoldASCIIAsToLower: the Accept check says what
// bytes.Contains(bytes.ToLower(accept), "text/event-stream") said, on
// headers of mixed case, near misses and non-ASCII bytes (Kelvin sign,
// dotted capital I, long s, invalid UTF-8).
func TestContainsFoldASCIIAsToLower(t *testing.T) {
	parts := []string{"text/event-stream", "TEXT/EVENT-STREAM", "Text/Event-Stream", "text/event-strea", "ext/event-stream",
		"application/json", ", ", ";q=0.9", "*/*", "\u212a", "\u0130", "\u017f", "\xff", "text/event-\u017ftream", "TEXT/EVENT-\u212aSTREAM", "t"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b []byte
		for range rng.IntN(5) {
			b = append(b, parts[rng.IntN(len(parts))]...)
		}
		want := bytes.Contains(bytes.ToLower(b), []byte("text/event-stream"))
		if got := containsFoldASCII(b, "text/event-stream"); got != want {
			t.Fatalf("%q: %v, want %v", b, got, want)
		}
	}
}

// TestIsEventStreamAllocatesNothing: the check runs twice a request; with
// bytes.ToLower it copied every Accept header (one allocation each).
func TestIsEventStreamAllocatesNothing(t *testing.T) {
	var h fasthttp.RequestHeader
	h.SetRequestURI("/api/v1/turns/tur_1")
	h.Set("Accept", "application/json, text/plain, */*")
	if n := testing.AllocsPerRun(100, func() { _ = IsEventStream(&h) }); n != 0 {
		t.Fatalf("IsEventStream allocates %v times, want 0", n)
	}
}
