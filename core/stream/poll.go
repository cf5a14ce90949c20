package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Page is one read of the stream by a client that polls instead of
// holding a connection open.
type Page struct {
	// Entries are the events the filter let through, in stream order.
	Entries []Entry
	// Next is where the next poll continues: after the last event read,
	// whether or not the filter let it through.
	Next Position
	// More reports that the page stopped at its limit: poll again at once.
	More bool
	// Gap reports that the LastEventID asked for could not be resumed from.
	Gap bool
}

// PollRequest is what a polling client asks for. At most one of From and
// LastEventID is used: From (a position a previous Page returned) first;
// with neither, the poll starts at the head and returns what commits from
// now on at the next poll.
type PollRequest struct {
	AccountID   string
	Filter      Filter
	From        *Position
	LastEventID string
	Limit       int
}

// Poll reads up to req.Limit events for the filter, in stream order.
func (h *Hub) Poll(ctx context.Context, req PollRequest) (Page, error) {
	var p Page
	switch {
	case req.From != nil:
		p.Next = *req.From
	case req.LastEventID != "":
		pos, at, ok, err := h.log.Locate(ctx, req.AccountID, req.LastEventID)
		if err != nil {
			return Page{}, err
		}
		if ok && !at.Before(h.clock.Now().Add(-h.opts.Retention)) {
			p.Next = pos
			break
		}
		p.Gap = true
		fallthrough
	default:
		head, err := h.log.Head(ctx, req.AccountID)
		if err != nil {
			return Page{}, err
		}
		p.Next = head
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	for {
		entries, _, err := h.log.Read(ctx, req.AccountID, p.Next, h.opts.PageSize)
		if err != nil {
			return Page{}, err
		}
		for _, e := range entries {
			p.Next = e.Position
			if req.Filter.Match(e.Event) {
				p.Entries = append(p.Entries, e)
				if len(p.Entries) == limit {
					p.More = true
					return p, nil
				}
			}
		}
		if len(entries) < h.opts.PageSize {
			return p, nil
		}
	}
}

// String encodes the position for a cursor.
func (p Position) String() string { return strconv.FormatUint(p.Tx, 10) + ":" + p.ID }

// ParsePosition decodes Position.String.
func ParsePosition(s string) (Position, error) {
	tx, id, ok := strings.Cut(s, ":")
	n, err := strconv.ParseUint(tx, 10, 64)
	if !ok || err != nil {
		return Position{}, fmt.Errorf("stream: malformed position %q", s)
	}
	return Position{Tx: n, ID: id}, nil
}
