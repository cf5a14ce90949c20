package httpx

import (
	"bytes"
	"errors"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Timeouts bound how long one connection may hold the server. Zero leaves
// a bound off.
type Timeouts struct {
	// ReadHeader is the time to read a request's headers, from its first
	// byte (or from the accept, for a connection's first request).
	ReadHeader time.Duration
	// Read is the time to read a request's body, from the end of its
	// headers.
	Read time.Duration
	// Write is the time to write a response, once the handler has
	// returned. Event streams (text/event-stream) are exempt: they bound
	// each write of their own.
	Write time.Duration
	// Idle is how long a keep-alive connection may wait for its next
	// request.
	Idle time.Duration
}

// applyTimeouts sets t on the fasthttp server behind a fiber app.
//
// fasthttp has one read deadline per request, set when it starts: that is
// ReadHeader. Once the headers are in, HeaderReceived moves the deadline to
// Read for the body and picks the write deadline: Write, or none for an
// event stream, which sets a deadline before each of its own writes.
//
// A request without a body (no Content-Length or 0, not chunked: every
// GET) keeps the header's deadline: fasthttp reads nothing more of it, and
// the next request starts with deadlines of its own. Moving it cost a
// clock read and a timer update per request for nothing (about 1 % of a
// memory-mode GET's CPU, issue 30: four deadlines a request, a clock read
// being ~100 ns on this VM).
func applyTimeouts(s *fasthttp.Server, t Timeouts) {
	s.ReadTimeout = t.ReadHeader
	s.IdleTimeout = t.Idle
	s.WriteTimeout = 0 // per request, below
	s.HeaderReceived = func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		rc := fasthttp.RequestConfig{ReadTimeout: t.Read, WriteTimeout: t.Write}
		if !hasBody(h) {
			rc.ReadTimeout = 0 // fasthttp leaves the deadline as it is
		}
		if IsEventStream(h) {
			rc.WriteTimeout = 0
		}
		return rc
	}
}

// hasBody tells whether fasthttp will read a body after h: a positive
// Content-Length, or chunked (-1). Without either (0, or -2: none given)
// a request has no body (RFC 9112 section 6.3).
func hasBody(h *fasthttp.RequestHeader) bool {
	n := h.ContentLength()
	return n > 0 || n == -1
}

// ignoreLostConnections keeps fasthttp from answering, and the error
// handler from logging as a 500, a request whose connection broke while it
// was read (reset by the client, or closed by the server at the end of its
// shutdown timeout): nobody is there to read an answer. A read that timed
// out still gets its 408.
func ignoreLostConnections(s *fasthttp.Server) {
	next := s.ErrorHandler
	s.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		var ne net.Error
		if errors.As(err, &ne) && !ne.Timeout() {
			return
		}
		if next != nil {
			next(ctx, err)
		}
	}
}

// IsEventStream tells whether a request asks for a server-sent event
// stream: it accepts text/event-stream (a browser's EventSource always
// does), or it is one of the stream endpoints (…/events, …/events/stream),
// which stream whatever the client accepts.
func IsEventStream(h *fasthttp.RequestHeader) bool {
	if containsFoldASCII(h.Peek(fasthttp.HeaderAccept), "text/event-stream") {
		return true
	}
	path, _, _ := bytes.Cut(h.RequestURI(), []byte("?"))
	return bytes.HasSuffix(path, []byte("/events")) || bytes.HasSuffix(path, []byte("/events/stream"))
}

// containsFoldASCII tells whether s contains the lower-case ASCII word
// sub in any case, without the copy bytes.ToLower made of every request's
// Accept header (twice a request: the timeouts and the deadline ask). For
// "text/event-stream" it is what bytes.ToLower and bytes.Contains said:
// no non-ASCII character lower-cases to one of its letters.
func containsFoldASCII(s []byte, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) {
			b := s[i+j]
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			if b != sub[j] {
				break
			}
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}
