package streamhttp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/stream"
)

// Defaults of SSE.
const (
	// DefaultHeartbeat is how often an idle stream sends a comment line, so
	// that proxies and load balancers (which commonly drop connections
	// idle for 30 to 60 seconds) keep it open, and so that a vanished
	// client is noticed.
	DefaultHeartbeat = 15 * time.Second
	// DefaultRetry is the reconnection delay the stream asks EventSource
	// clients to use.
	DefaultRetry = 2 * time.Second
	// writeTimeout bounds one write to the client: a client that stops
	// reading is dropped rather than holding a goroutine for ever.
	writeTimeout = 30 * time.Second
)

// Names of the SSE events the stream sends besides the domain events.
const (
	// EventGap: the Last-Event-ID could not be resumed from (unknown, or
	// older than the retained window); events may have been missed.
	EventGap = "gap"
	// EventOverflow: the client fell too far behind and the server cut it
	// off; reconnecting with Last-Event-ID resumes without loss.
	EventOverflow = "overflow"
	// EventShutdown: the server is stopping; reconnect (to another
	// process, or to this one once it is back).
	EventShutdown = "shutdown"
	// EventFailure: the stream failed on the server's side (the log could
	// not be read); reconnect. Not "error", which EventSource uses for its
	// own connection errors.
	EventFailure = "failure"
)

// SSE configures Serve.
type SSE struct {
	// Heartbeat is the idle interval between comment lines;
	// DefaultHeartbeat when zero.
	Heartbeat time.Duration
	// Retry is sent as the stream's retry: field; DefaultRetry when zero.
	Retry time.Duration
	// Message turns an entry into the SSE event name and the JSON of its
	// data line; nil sends stream.MessageOf under the event's name. An
	// empty name sends nothing (an internal event about another link). An
	// error ends the stream with its own final event (Ended), or
	// EventFailure.
	Message func(e stream.Entry) (name string, data any, err error)
	// LastEventID is the id the client resumed from, quoted in a gap event.
	LastEventID string
	// First, when set, is sent right after the connection opens (the
	// display board's initial state).
	First *Frame
	// Idle, when set, runs at every heartbeat; a frame it
	// returns is sent (the counter console re-reads its line then, for
	// the changes that raise no event: start, hold, no-show, ...). An
	// error ends the stream with a final event named by the error's Event
	// (see Ended), or EventFailure.
	Idle func() (*Frame, error)
	// Done, when set, runs once the stream has ended, after the
	// subscription is closed.
	Done func()
}

// Frame is one SSE event.
type Frame struct {
	ID    string
	Event string
	Data  any
}

// Ended is an error that ends a stream with a final event of its own.
type Ended struct {
	Event   string
	Message string
	Details map[string]any
}

func (e *Ended) Error() string { return e.Event + ": " + e.Message }

// Serve answers c with the subscription as text/event-stream and returns
// at once; the events are written after the handler returns, on the
// hijacked connection (see hijack), until the subscription ends or the
// client goes away, which is noticed at once. Serve owns sub and closes
// it.
//
// Each domain event is
//
//	id: <event id>
//	event: <event name>
//	data: <JSON on one line>
//
// so a browser's EventSource reconnects with Last-Event-ID by itself.
func Serve(c *fiber.Ctx, sub *stream.Subscription, cfg SSE) error {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.Message == nil {
		cfg.Message = func(e stream.Entry) (string, any, error) { return e.Event.Name, stream.MessageOf(e.Event), nil }
	}
	SetHeaders(c)
	hijack(c, func(ctx context.Context, sw *Writer) {
		if cfg.Done != nil {
			defer cfg.Done()
		}
		defer sub.Close()
		w := sw.w
		flush := sw.Flush
		fmt.Fprintf(w, "retry: %d\n: connected\n\n", cfg.Retry.Milliseconds())
		if sub.Gap() {
			writeEvent(w, "", EventGap, map[string]any{
				"message":     "the stream cannot resume after this id (unknown, or older than the retained window); events may have been missed: re-read the state you need",
				"lastEventId": cfg.LastEventID,
			})
		}
		if cfg.First != nil {
			writeEvent(w, cfg.First.ID, cfg.First.Event, cfg.First.Data)
		}
		if !flush() {
			return
		}
		var last string
		for {
			e, err := sub.Next(ctx, cfg.Heartbeat)
			switch {
			case err == nil:
				name, data, merr := cfg.Message(e)
				if merr != nil {
					var end *Ended
					if errors.As(merr, &end) {
						writeEvent(w, "", end.Event, endData(end))
					} else {
						writeEvent(w, "", EventFailure, map[string]any{"message": "the stream failed; reconnect with Last-Event-ID", "lastEventId": last})
					}
					flush()
					return
				}
				if name == "" {
					continue
				}
				writeEvent(w, e.Event.ID, name, data)
				last = e.Event.ID
			case errors.Is(err, stream.ErrIdle):
				if cfg.Idle != nil {
					f, ierr := cfg.Idle()
					if ierr != nil {
						var end *Ended
						if !errors.As(ierr, &end) {
							end = &Ended{Event: EventFailure, Message: "the stream ended; reconnect"}
						}
						writeEvent(w, "", end.Event, endData(end))
						flush()
						return
					}
					if f != nil {
						writeEvent(w, f.ID, f.Event, f.Data)
					}
				}
				w.WriteString(": heartbeat\n\n")
			case ctx.Err() != nil:
				return // the client went away
			case errors.Is(err, stream.ErrOverflow):
				writeEvent(w, "", EventOverflow, map[string]any{
					"message":     "this client fell too far behind and was disconnected; reconnect with Last-Event-ID to resume without loss",
					"lastEventId": last,
				})
				flush()
				return
			case errors.Is(err, stream.ErrClosed):
				writeEvent(w, "", EventShutdown, map[string]any{
					"message":     "the server is shutting down; reconnect with Last-Event-ID",
					"lastEventId": last,
				})
				flush()
				return
			default:
				writeEvent(w, "", EventFailure, map[string]any{"message": "the stream failed; reconnect with Last-Event-ID", "lastEventId": last})
				flush()
				return
			}
			if !flush() {
				return
			}
		}
	})
	return nil
}

// SetHeaders sets the headers of an event stream's response.
func SetHeaders(c *fiber.Ctx) {
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, "text/event-stream; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-cache, no-store")
	// nginx buffers responses unless told not to.
	c.Set("X-Accel-Buffering", "no")
}

// WriteEnd writes the final event of a stream ended by err (what
// stream.Subscription.Next or stream.Member.Next returned): overflow,
// shutdown, or failure. last is the id of the last event sent.
func WriteEnd(w *Writer, err error, last string) {
	var end *Ended
	switch {
	case errors.As(err, &end):
		w.Event("", end.Event, endData(end))
	case errors.Is(err, stream.ErrOverflow):
		w.Event("", EventOverflow, map[string]any{
			"message":     "this client fell too far behind and was disconnected; reconnect with Last-Event-ID to resume without loss",
			"lastEventId": last,
		})
	case errors.Is(err, stream.ErrClosed):
		w.Event("", EventShutdown, map[string]any{
			"message":     "the server is shutting down; reconnect with Last-Event-ID",
			"lastEventId": last,
		})
	default:
		w.Event("", EventFailure, map[string]any{"message": "the stream failed; reconnect with Last-Event-ID", "lastEventId": last})
	}
}

func endData(e *Ended) map[string]any {
	d := map[string]any{"message": e.Message}
	for k, v := range e.Details {
		d[k] = v
	}
	return d
}

// writeEvent writes one SSE event. The JSON is on one line (encoding/json
// never emits raw newlines); the name and id are ours, never the client's.
func writeEvent(w *bufio.Writer, id, name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b = []byte(`{"message":"an event could not be encoded"}`)
	}
	if id != "" {
		w.WriteString("id: " + oneLine(id) + "\n")
	}
	w.WriteString("event: " + oneLine(name) + "\ndata: ")
	w.Write(b)
	w.WriteString("\n\n")
}

func oneLine(s string) string { return lineBreaks.Replace(s) }

// lineBreaks drops line breaks; built once (a Replacer builds its tables
// on first use, which was paid for every event written).
var lineBreaks = strings.NewReplacer("\n", "", "\r", "")
