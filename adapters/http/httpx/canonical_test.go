package httpx

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// The keys set with SetCanonical must be what fasthttp makes of the
// spec's spelling, or a response would carry a key that Peek, and any
// later Set of the same header, do not find.
func TestCanonicalHeaderKeysAreFasthttps(t *testing.T) {
	for name, key := range map[string][]byte{
		HeaderRequestID: requestIDKey, HeaderRateLimit: rateLimitKey,
		HeaderRateRemaining: rateRemainingKey, HeaderRateReset: rateResetKey,
	} {
		var h fasthttp.ResponseHeader
		h.Set(name, "1")
		var got []byte
		for k := range h.All() {
			if string(k) != "Content-Type" && string(k) != "Server" && string(k) != "Date" {
				got = append([]byte(nil), k...)
			}
		}
		if string(got) != string(key) {
			t.Errorf("%s: fasthttp keeps %q, the code sets %q", name, got, key)
		}
	}
}
