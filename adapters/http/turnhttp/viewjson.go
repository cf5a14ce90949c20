package turnhttp

import (
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/turns"
)

// A turn's view is the answer of the hottest routes (GET /turns/{id} is
// polled by every waiting customer; every dispatch operation answers
// one). Encoded by reflection, json/v2 spent 12% of a memory-mode GET's
// CPU on it (issue 16, P1). appendView writes the same bytes directly:
// the fields in their declaration order, strings in json/v2's minimal
// quoting with invalid UTF-8 replaced, times in RFC 3339 with
// nanoseconds, a nil map as {} and a map's keys sorted, as httpx's
// encoder (deterministic, invalid UTF-8 allowed) does.
// TestViewJSONMatchesTheEncoder holds it to that byte for byte, on views
// with every field set by reflection, so a field added to the view and
// not here fails it.

// writeView answers status with v as JSON, as httpx.OK and httpx.Created
// would.
func writeView(c *fiber.Ctx, status int, v *turns.View) error {
	bp := viewBuffers.Get().(*[]byte)
	defer viewBuffers.Put(bp)
	b, ok := appendView((*bp)[:0], v)
	*bp = b
	if !ok {
		// A time json/v2 refuses (a year past 9999): let the encoder
		// say so, as before. A copy goes to it, so that v does not
		// escape: the caller's view stays on its stack (an allocation
		// of every GET, issue 30).
		cp := *v
		return c.Status(status).JSON(cp)
	}
	c.Status(status)
	c.Response().SetBody(b) // copied into fasthttp's own buffer
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	return nil
}

var viewBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// appendView appends v's JSON to b; false when the encoder must write it
// instead: a time json/v2 refuses, or map keys whose order or
// uniqueness takes more than a byte comparison.
func appendView(b []byte, v *turns.View) ([]byte, bool) {
	t := &v.Turn
	ok := true
	b = append(b, `{"id":`...)
	b = appendString(b, t.ID)
	b = append(b, `,"queueId":`...)
	b = appendString(b, t.QueueID)
	b = append(b, `,"queueRunId":`...)
	b = appendString(b, t.RunID)
	b = append(b, `,"number":`...)
	b = strconv.AppendInt(b, int64(t.Number), 10)
	b = append(b, `,"displayCode":`...)
	b = appendString(b, t.DisplayCode)
	b = append(b, `,"status":`...)
	b = appendString(b, string(t.Status))
	b = append(b, `,"priority":`...)
	b = appendString(b, string(t.Priority))
	b = append(b, `,"peopleCount":`...)
	b = strconv.AppendInt(b, int64(t.PeopleCount), 10)
	b = append(b, `,"phone":`...)
	b = appendStringPtr(b, t.Phone)
	b = append(b, `,"notifyWhatsapp":`...)
	b = strconv.AppendBool(b, t.NotifyWhatsapp)
	b = append(b, `,"formResponse":`...)
	var good bool
	b, good = appendStringMap(b, t.FormResponse)
	ok = ok && good
	b = append(b, `,"stationId":`...)
	b = appendStringPtr(b, t.StationID)
	b = append(b, `,"callCount":`...)
	b = strconv.AppendInt(b, int64(t.CallCount), 10)
	b = append(b, `,"reentries":`...)
	b = strconv.AppendInt(b, int64(t.Reentries), 10)
	for _, f := range [...]struct {
		name string
		at   *time.Time
	}{
		{`,"arrivedAt":`, t.ArrivedAt}, {`,"calledAt":`, t.CalledAt},
		{`,"startedAt":`, t.StartedAt}, {`,"finishedAt":`, t.FinishedAt},
		{`,"createdAt":`, &t.CreatedAt}, {`,"updatedAt":`, &t.UpdatedAt},
	} {
		b = append(b, f.name...)
		if f.at == nil {
			b = append(b, "null"...)
			continue
		}
		b, good = appendTime(b, *f.at)
		ok = ok && good
	}
	b = append(b, `,"appointmentId":`...)
	b = appendStringPtr(b, t.AppointmentID)

	b = append(b, `,"position":`...)
	if v.Position == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*v.Position), 10)
	}
	b = append(b, `,"waitEstimate":`...)
	if w := v.WaitEstimate; w == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"seconds":`...)
		b = strconv.AppendInt(b, int64(w.Seconds), 10)
		b = append(b, `,"minutes":`...)
		b = strconv.AppendInt(b, int64(w.Minutes), 10)
		b = append(b, `,"basis":`...)
		b = appendString(b, w.Basis)
		b = append(b, `,"averageServiceSeconds":`...)
		b = strconv.AppendInt(b, int64(w.AverageServiceSeconds), 10)
		b = append(b, `,"servers":`...)
		b = strconv.AppendInt(b, int64(w.Servers), 10)
		b = append(b, `,"range":`...)
		if r := w.Range; r == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, `{"p50Seconds":`...)
			b = strconv.AppendInt(b, int64(r.P50Seconds), 10)
			b = append(b, `,"p90Seconds":`...)
			b = strconv.AppendInt(b, int64(r.P90Seconds), 10)
			b = append(b, `,"p50Minutes":`...)
			b = strconv.AppendInt(b, int64(r.P50Minutes), 10)
			b = append(b, `,"p90Minutes":`...)
			b = strconv.AppendInt(b, int64(r.P90Minutes), 10)
			b = append(b, `,"samples":`...)
			b = strconv.AppendInt(b, int64(r.Samples), 10)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = append(b, `,"queue":{"id":`...)
	b = appendString(b, v.Queue.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, v.Queue.Name)
	b = append(b, `,"type":`...)
	b = appendString(b, v.Queue.Type)
	b = append(b, `},"station":`...)
	if s := v.Station; s == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"id":`...)
		b = appendString(b, s.ID)
		b = append(b, `,"label":`...)
		b = appendString(b, s.Label)
		b = append(b, '}')
	}
	return append(b, '}'), ok
}

// appendString quotes s as json/v2 does; invalid UTF-8 comes out replaced
// (the error only says there was some, which httpx's encoder allows).
func appendString(b []byte, s string) []byte {
	// Ids, statuses, codes: printable ASCII with nothing to escape, the
	// common case, copied between quotes without jsontext's per-byte
	// escaping and UTF-8 decoding (about half of its cost here, issue 30).
	if plainASCII(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b, _ = jsontext.AppendQuote(b, s)
	return b
}

// plainASCII reports whether json/v2 writes s as it is between quotes:
// bytes 0x20-0x7E but for the quote and the backslash.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

func appendStringMap(b []byte, m map[string]string) ([]byte, bool) {
	if len(m) == 0 {
		return append(b, "{}"...), true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !utf8.ValidString(k) || !bmpOnly(k) {
			// json/v2 orders keys by their UTF-16 encoding (byte order
			// differs past the basic plane), and invalid UTF-8 may make
			// two keys one.
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}'), true
}

// bmpOnly reports whether valid UTF-8 s has no character past U+FFFF
// (those take four bytes, led by 0xF0-0xF4).
func bmpOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xF0 {
			return false
		}
	}
	return true
}

// appendTime writes t as json/v2 does by default (RFC 3339 with
// nanoseconds), false where json/v2 refuses it: a year outside
// [0,9999], or an offset of 24 hours or more.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	if fast, ok := httpx.AppendRFC3339Nano(b, t); ok { // a UTC time
		return append(fast, '"'), true
	}
	b = b[:len(b)-1]
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := t.Zone(); off <= -24*3600 || off >= 24*3600 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}
