package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors of the streams.
var (
	// ErrGap is returned once by EventStream.Next when the server could not
	// resume after the last event id (older than its retained window of
	// 24 hours, or unknown): events may have been missed; re-read the state
	// you need. The stream goes on; keep calling Next.
	ErrGap = errors.New("qms: the stream could not resume after the last event; events may have been missed")
	// ErrRevoked is returned by BoardStream.Next when the display token was
	// revoked.
	ErrRevoked = errors.New("qms: the display token was revoked")
	// ErrClosed is returned by Next after Close.
	ErrClosed = errors.New("qms: the stream is closed")
)

// Event is an event of the live stream: the webhook body of spec section
// 6, with the event's id.
type Event = StreamMessage

// StreamOptions choose what SubscribeEvents receives.
type StreamOptions struct {
	// QueueID and RunID, when set, keep only that queue's or run's events.
	QueueID, RunID string
	// LastEventID resumes after that event (within 24 hours).
	LastEventID string
}

// PollEventsParams are the parameters of PollEvents.
type PollEventsParams struct {
	QueueID, RunID string
	// Cursor is the Cursor of the previous page; empty starts now.
	Cursor string
	// LastEventID starts after that event instead (within 24 hours).
	LastEventID string
	// Limit is the page size, 1-200 (default 50).
	Limit int
}

// PollEvents reads one page of the event stream, for programs that poll
// rather than hold a connection (GET /api/v1/events/stream without
// Accept: text/event-stream). Pass the page's Cursor to the next call;
// HasMore says to call again at once.
func (c *Client) PollEvents(ctx context.Context, p PollEventsParams) (*StreamPage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"queueId": p.QueueID, "runId": p.RunID, "cursor": p.Cursor, "lastEventId": p.LastEventID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	var out StreamPage
	if err := c.do(ctx, request{op: "streamEvents", method: http.MethodGet, path: "/api/v1/events/stream", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// EventStream is an open subscription to the live event stream. Next
// returns the events one by one; after a dropped connection, or when the
// server ends the stream (a slow reader cut off, a server shutting down),
// Next reconnects by itself with the id of the last event received, so
// nothing is lost within the server's retained window.
type EventStream struct{ s *sse }

// SubscribeEvents opens the live event stream (Server-Sent Events on GET
// /api/v1/events/stream). It returns an *Error when the server refuses
// (a key without turns:read, queues:read or appointments:read, an unknown
// or foreign queue or run). Close the stream when done.
func (c *Client) SubscribeEvents(ctx context.Context, opts StreamOptions) (*EventStream, error) {
	q := url.Values{}
	if opts.QueueID != "" {
		q.Set("queueId", opts.QueueID)
	}
	if opts.RunID != "" {
		q.Set("runId", opts.RunID)
	}
	path := "/api/v1/events/stream"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	s := newSSE(ctx, &c.base, "streamEvents", path, opts.LastEventID)
	if err := s.connect(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return &EventStream{s: s}, nil
}

// Next returns the next event. See EventStream and ErrGap.
func (e *EventStream) Next(ctx context.Context) (Event, error) {
	for {
		f, err := e.s.next(ctx)
		if err != nil {
			return Event{}, err
		}
		switch f.event {
		case "gap":
			return Event{}, ErrGap
		case "overflow", "shutdown", "failure":
			e.s.drop()
			continue
		}
		var ev Event
		if err := json.Unmarshal([]byte(f.data), &ev); err != nil {
			return Event{}, fmt.Errorf("qms: stream event %s: %w", f.id, err)
		}
		return ev, nil
	}
}

// LastEventID is the id of the last event Next returned (or the one the
// stream was opened with): where a new subscription would resume.
func (e *EventStream) LastEventID() string { return e.s.lastEventID() }

// Close ends the stream.
func (e *EventStream) Close() error { e.s.Close(); return nil }

// BoardUpdate is one update of a display board: the whole board, and the
// event that changed it (nil for the first).
type BoardUpdate struct {
	// EventID is the id of the event that changed the board ("" first).
	EventID string
	Board   DisplayBoard
	Trigger *BoardTrigger
}

// BoardTrigger names the event that changed a board.
type BoardTrigger struct {
	Event       string `json:"event"`
	TurnID      string `json:"turnId,omitempty"`
	DisplayCode string `json:"displayCode,omitempty"`
}

// BoardStream is an open display board stream.
type BoardStream struct{ s *sse }

// SubscribeDisplayBoard opens a display board's stream (GET
// /display/{token}/events), as the board page does: the board now, then
// the board again after every change of its run. The token is the
// capability; no API key is needed. It reconnects by itself.
func (c *Client) SubscribeDisplayBoard(ctx context.Context, token string) (*BoardStream, error) {
	s := newSSE(ctx, &c.base, "streamDisplayBoard", "/display/"+url.PathEscape(token)+"/events", "")
	s.resume = false // every connection starts with the whole board
	if err := s.connect(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return &BoardStream{s: s}, nil
}

// Next returns the next update; ErrRevoked once the token is revoked.
func (b *BoardStream) Next(ctx context.Context) (BoardUpdate, error) {
	for {
		f, err := b.s.next(ctx)
		if err != nil {
			return BoardUpdate{}, err
		}
		switch f.event {
		case "revoked":
			b.s.Close()
			return BoardUpdate{}, ErrRevoked
		case "overflow", "shutdown", "failure":
			b.s.drop()
			continue
		case "board":
		default:
			continue
		}
		var m struct {
			Board   DisplayBoard  `json:"board"`
			Trigger *BoardTrigger `json:"trigger"`
		}
		if err := json.Unmarshal([]byte(f.data), &m); err != nil {
			return BoardUpdate{}, fmt.Errorf("qms: board update: %w", err)
		}
		return BoardUpdate{EventID: f.id, Board: m.Board, Trigger: m.Trigger}, nil
	}
}

// Close ends the stream.
func (b *BoardStream) Close() error { b.s.Close(); return nil }

// frame is one Server-Sent Event.
type frame struct {
	id, event, data string
	retry           time.Duration
}

// sse is a self-reconnecting Server-Sent Events connection.
type sse struct {
	b      *base
	op     string
	path   string
	resume bool // send Last-Event-ID on reconnecting

	ctx    context.Context // the stream's life
	cancel context.CancelFunc

	mu      sync.Mutex
	last    string
	frames  chan frame // of the current connection; nil when down
	errc    chan error
	stop    context.CancelFunc // ends the current connection
	retry   time.Duration
	failing int
}

func newSSE(ctx context.Context, b *base, op, path, last string) *sse {
	ctx, cancel := context.WithCancel(ctx)
	return &sse{b: b, op: op, path: path, resume: true, ctx: ctx, cancel: cancel, last: last, retry: 2 * time.Second}
}

func (s *sse) lastEventID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// connect opens a connection; an *Error when the server refuses it.
func (s *sse) connect(ctx context.Context) error {
	cctx, stop := context.WithCancel(s.ctx)
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, s.b.baseURL+s.path, nil)
	if err != nil {
		stop()
		return err
	}
	s.b.auth(req.Header)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", s.b.userAgent)
	if last := s.lastEventID(); last != "" && s.resume {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := s.b.http.Do(req)
	if err != nil {
		stop()
		return fmt.Errorf("qms: %s: %w", s.op, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		stop()
		return decodeError(s.op, resp, body)
	}
	frames, errc := make(chan frame), make(chan error, 1)
	go read(cctx, resp.Body, frames, errc)
	s.mu.Lock()
	s.frames, s.errc, s.stop, s.failing = frames, errc, stop, 0
	s.mu.Unlock()
	return nil
}

// read parses the body into frames until it ends.
func read(ctx context.Context, body io.ReadCloser, frames chan<- frame, errc chan<- error) {
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	var f frame
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if f.event != "" || len(data) > 0 || f.id != "" || f.retry > 0 {
				f.data = strings.Join(data, "\n")
				select {
				case frames <- f:
				case <-ctx.Done():
					errc <- ctx.Err()
					return
				}
			}
			f, data = frame{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // comments: heartbeats
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.id = value
		case "event":
			f.event = value
		case "data":
			data = append(data, value)
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil {
				f.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	errc <- err
}

// next returns the next event frame, reconnecting as needed.
func (s *sse) next(ctx context.Context) (frame, error) {
	for {
		if s.ctx.Err() != nil {
			return frame{}, ErrClosed
		}
		s.mu.Lock()
		frames, errc := s.frames, s.errc
		s.mu.Unlock()
		if frames == nil {
			if err := s.reconnect(ctx); err != nil {
				return frame{}, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return frame{}, ctx.Err()
		case <-s.ctx.Done():
			return frame{}, ErrClosed
		case <-errc:
			s.drop()
		case f := <-frames:
			if f.retry > 0 {
				s.mu.Lock()
				s.retry = f.retry
				s.mu.Unlock()
			}
			if f.event == "" && f.data == "" {
				continue // a retry: line alone
			}
			if f.id != "" {
				s.mu.Lock()
				s.last = f.id
				s.mu.Unlock()
			}
			return f, nil
		}
	}
}

// reconnect waits (the server's retry, doubled per failure up to 30 s, or
// a 429's Retry-After) and connects again. Refusals other than 429 and 5xx
// are permanent and returned.
func (s *sse) reconnect(ctx context.Context) error {
	s.mu.Lock()
	wait := s.retry << min(s.failing, 4)
	s.failing++
	s.mu.Unlock()
	wait = min(wait, 30*time.Second)
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-s.ctx.Done():
			t.Stop()
			return ErrClosed
		case <-t.C:
		}
		err := s.connect(ctx)
		if err == nil {
			return nil
		}
		var apiErr *Error
		if errors.As(err, &apiErr) {
			switch {
			case apiErr.StatusCode == http.StatusTooManyRequests && apiErr.RetryAfter > 0:
				wait = apiErr.RetryAfter
				continue
			case apiErr.StatusCode < 500 && apiErr.StatusCode != http.StatusTooManyRequests:
				return err
			}
		}
		wait = min(wait*2, 30*time.Second)
	}
}

// drop ends the current connection; the next call of next reconnects.
func (s *sse) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
	s.frames, s.errc, s.stop = nil, nil, nil
}

// Close ends the stream for good.
func (s *sse) Close() {
	s.drop()
	s.cancel()
}
