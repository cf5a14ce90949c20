// Package streamhttp is the REST adapter of the live event stream:
// GET /api/v1/events/stream, Server-Sent Events of the account's events,
// and the SSE writer the display board's stream shares.
package streamhttp

import (
	"context"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
)

// Path is the stream's path under /api/v1.
const Path = "/events/stream"

// HeaderLastEventID is the header EventSource sends when it reconnects.
const HeaderLastEventID = "Last-Event-ID"

// Queues is what the stream needs of the queues module: that the queue or
// run a subscriber filters on exists and is the account's.
type Queues interface {
	GetQueue(ctx context.Context, accountID, id string) (queues.Queue, error)
	GetRun(ctx context.Context, accountID, id string) (queues.Run, error)
}

// Register mounts the stream on the authenticated /api/v1 router.
//
// A request that accepts text/event-stream (EventSource always does; with
// curl, pass -H 'Accept: text/event-stream') gets the live stream. Any
// other gets one JSON page of the same events, for clients that poll:
// {data, cursor, hasMore}, where data holds the stream's messages and
// cursor (passed back as ?cursor=) continues after them; without a cursor
// or lastEventId, the first page is empty and its cursor starts at the
// moment of the request.
//
// The key needs at least one of turns:read, queues:read and
// appointments:read; it then receives the events of the modules it may
// read (turn.* with turns:read, queue.* with queues:read, appointment.*
// with appointments:read) and nothing else. queueId and runId narrow the
// stream to one queue or run. Last-Event-ID (the header EventSource sends
// on reconnecting, or the lastEventId query parameter for the first
// connection) resumes right after that event.
func Register(r fiber.Router, hub *stream.Hub, qs Queues, cur httpx.Cursors, cfg SSE) {
	r.Get(Path, func(c *fiber.Ctx) error {
		p := httpx.PrincipalOf(c)
		if !anyScope(p.Scopes, stream.StreamScopes) {
			return platform.NewError(platform.KindForbidden, httpx.CodeInsufficientScope,
				"the event stream needs one of the scopes turns:read, queues:read or appointments:read",
				map[string]any{"requiredScope": string(accounts.ScopeTurnsRead)})
		}
		ctx := c.UserContext()
		f := stream.Filter{Scopes: p.Scopes, QueueID: strings.Clone(c.Query("queueId")), RunID: strings.Clone(c.Query("runId"))}
		var v platform.Validator
		v.OptLen("queueId", optional(f.QueueID), 1, 128)
		v.OptLen("runId", optional(f.RunID), 1, 128)
		last := strings.Clone(c.Get(HeaderLastEventID))
		if last == "" {
			last = strings.Clone(c.Query("lastEventId"))
		}
		v.OptLen("lastEventId", optional(last), 1, 128)
		// The header, unlike the query, passed no text check; a NUL or
		// invalid UTF-8 in it must not reach the database's lookup.
		v.Text("lastEventId", last, platform.TextPlain)
		if err := v.Err(); err != nil {
			return err
		}
		if f.QueueID != "" {
			if _, err := qs.GetQueue(ctx, p.AccountID, f.QueueID); err != nil {
				return err
			}
		}
		if f.RunID != "" {
			if _, err := qs.GetRun(ctx, p.AccountID, f.RunID); err != nil {
				return err
			}
		}
		if !acceptsEventStream(c) {
			return poll(c, hub, cur, p.AccountID, f, last)
		}
		sub, err := hub.Subscribe(ctx, stream.Request{AccountID: p.AccountID, Filter: f, LastEventID: last})
		if err != nil {
			return err
		}
		cfg := cfg
		cfg.LastEventID = last
		return Serve(c, sub, cfg)
	})
}

// pollList names the stream's cursors, binding them to it.
const pollList = "events/stream"

// PollPage is the JSON answer of the stream to a polling client.
type PollPage struct {
	Data []stream.Message `json:"data"`
	// Cursor continues after the last event read; pass it back as
	// ?cursor= on the next poll. Never null.
	Cursor string `json:"cursor"`
	// HasMore is true when the page stopped at its limit: poll again at
	// once.
	HasMore bool `json:"hasMore"`
	// Gap is true when lastEventId could not be resumed from (unknown, or
	// older than the retained window): events may have been missed.
	Gap bool `json:"gap"`
}

func poll(c *fiber.Ctx, hub *stream.Hub, cur httpx.Cursors, accountID string, f stream.Filter, last string) error {
	req := stream.PollRequest{AccountID: accountID, Filter: f, LastEventID: last, Limit: platform.DefaultPageLimit}
	var v platform.Validator
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > platform.MaxPageLimit {
			v.Fail("limit", "range", "must be an integer from 1 to %d", platform.MaxPageLimit)
		}
		req.Limit = n
	}
	if err := v.Err(); err != nil {
		return err
	}
	if raw := c.Query("cursor"); raw != "" {
		after, err := cur.Decode(raw, pollList, accountID)
		if err != nil {
			return err
		}
		pos, err := stream.ParsePosition(after)
		if err != nil {
			return platform.NewError(platform.KindInvalid, platform.CodeInvalidCursor, "the cursor is malformed",
				map[string]any{"parameter": "cursor"})
		}
		req.From = &pos
	}
	pg, err := hub.Poll(c.UserContext(), req)
	if err != nil {
		return err
	}
	out := PollPage{Data: make([]stream.Message, len(pg.Entries)), HasMore: pg.More, Gap: pg.Gap,
		Cursor: cur.Encode(pollList, accountID, pg.Next.String())}
	for i, e := range pg.Entries {
		out.Data[i] = stream.MessageOf(e.Event)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return httpx.OK(c, out)
}

// acceptsEventStream reports whether the request asks for the event
// stream explicitly.
func acceptsEventStream(c *fiber.Ctx) bool {
	return strings.Contains(strings.ToLower(c.Get(fiber.HeaderAccept)), "text/event-stream")
}

func anyScope(set accounts.ScopeSet, scopes []accounts.Scope) bool {
	for _, s := range scopes {
		if set.Allows(s) {
			return true
		}
	}
	return false
}

// optional is nil for an absent (empty) query parameter.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
