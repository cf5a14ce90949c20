package httpx

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// AccessLine is what the access log says of one request (AccessLog): the
// record's time and level, and its attributes in the order the line
// carries them.
type AccessLine struct {
	Time      time.Time
	Level     slog.Level
	Method    string
	Route     string
	Status    int
	Duration  time.Duration
	RequestID string
	Account   string
	Client    string
}

// accessMessage is the access line's msg.
const accessMessage = "http request"

// Record is the line as a slog record, for any handler.
func (l AccessLine) Record() slog.Record {
	r := slog.NewRecord(l.Time, l.Level, accessMessage, 0)
	r.AddAttrs(
		slog.String("method", l.Method),
		slog.String("route", l.Route),
		slog.Int("status", l.Status),
		slog.Duration("duration", l.Duration),
		slog.String("requestId", l.RequestID),
		slog.String("account", l.Account),
		slog.String("client", l.Client))
	return r
}

// AccessHandler is a slog.Handler that can write an access line without
// the record: slog's JSON handler spent about 8 % of a memory-mode GET's
// CPU on it (issue 16, P1), for a line whose fields are known in advance.
// HandleAccess reports false when it did not write the line, which then
// goes to Handle as a record; it must write exactly what Handle would.
type AccessHandler interface {
	HandleAccess(ctx context.Context, l AccessLine) (bool, error)
}

// AppendJSON appends the line as slog's JSON handler writes the record
// (with no handler options, attributes or groups of its own), newline
// included. It reports false, with b as it was, when that handler would
// write something else than the plain values: a string with a byte it
// escapes (a quote, a backslash, a control or non-ASCII byte: the method
// is the client's to choose) or a time outside RFC 3339's years. Then
// only the handler itself spells the line. TestAccessLineAsJSONHandler
// holds the two to the same bytes.
func (l AccessLine) AppendJSON(b []byte) ([]byte, bool) {
	if l.Time.IsZero() ||
		!plainJSON(l.Method) || !plainJSON(l.Route) || !plainJSON(l.RequestID) || !plainJSON(l.Account) || !plainJSON(l.Client) {
		return b, false
	}
	start := len(b)
	b = append(b, `{"time":"`...)
	var fast bool
	if b, fast = AppendRFC3339Nano(b, l.Time); !fast {
		if y := l.Time.Year(); y < 0 || y >= 10000 {
			return b[:start], false
		}
		b = l.Time.AppendFormat(b, time.RFC3339Nano)
	}
	b = append(b, `","level":"`...)
	b = append(b, l.Level.String()...)
	b = append(b, `","msg":"`+accessMessage+`","method":"`...)
	b = append(b, l.Method...)
	b = append(b, `","route":"`...)
	b = append(b, l.Route...)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(l.Status), 10)
	b = append(b, `,"duration":`...)
	b = strconv.AppendInt(b, int64(l.Duration), 10)
	b = append(b, `,"requestId":"`...)
	b = append(b, l.RequestID...)
	b = append(b, `","account":"`...)
	b = append(b, l.Account...)
	b = append(b, `","client":"`...)
	b = append(b, l.Client...)
	b = append(b, "\"}\n"...)
	return b, true
}

// plainJSON reports whether slog's JSON handler writes s as it is, between
// quotes: printable ASCII (DEL included) but for the quote and the
// backslash.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= 0x80 || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}
