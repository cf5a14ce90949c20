// Package webhook is for the receivers of a qms service's webhooks: it
// verifies the signature of a delivery and reads its event.
//
// Every delivery is an HTTP POST whose raw body is signed with the
// endpoint's secret (whsec_..., shown once when the endpoint is created):
//
//	X-Service-Signature: sha256=<lowercase hex HMAC-SHA256 of the body>
//
// Verify the signature over the exact bytes received, before parsing them,
// and answer 2xx within 10 seconds. A delivery can arrive more than once
// (retries, redeliveries): deduplicate by Event.ID, which is also the
// X-Service-Delivery header. The package depends on the standard library
// only, so it can be copied as is.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Headers of a delivery.
const (
	HeaderEvent     = "X-Service-Event"
	HeaderDelivery  = "X-Service-Delivery"
	HeaderSignature = "X-Service-Signature"
)

// MaxBodyBytes bounds what Parse reads of a body: deliveries are small.
const MaxBodyBytes = 1 << 20

const prefix = "sha256="

// Errors of Parse.
var (
	ErrInvalidSignature = errors.New("webhook: invalid signature")
	ErrBodyTooLarge     = errors.New("webhook: body too large")
)

// Event is a delivery's body.
type Event struct {
	// ID is the delivery id: the same on every retry of one delivery.
	ID string `json:"id"`
	// Event is the event's name, such as turn.called or queue.closed.
	Event string `json:"event"`
	// Data is the event's data (turnId, queueRunId, displayCode, ...).
	Data json.RawMessage `json:"data"`
	// CreatedAt is when the event happened, in UTC.
	CreatedAt time.Time `json:"createdAt"`
}

// Sign returns the X-Service-Signature value of body under secret.
func Sign(secret string, body []byte) string {
	return prefix + hex.EncodeToString(mac(secret, body))
}

func mac(secret string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

// Verify reports whether signature (the X-Service-Signature header) is the
// signature of body under secret. The comparison takes the same time
// whatever the signature, so a forger learns nothing from timing.
func Verify(secret string, body []byte, signature string) bool {
	hexSig, ok := strings.CutPrefix(signature, prefix)
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, mac(secret, body))
}

// Parse reads r's body (at most MaxBodyBytes), verifies its signature
// under secret and decodes the event. It returns ErrInvalidSignature when
// the signature does not match: answer such a request 401 and ignore it.
func Parse(r *http.Request, secret string) (Event, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return Event{}, fmt.Errorf("webhook: read body: %w", err)
	}
	if len(body) > MaxBodyBytes {
		return Event{}, ErrBodyTooLarge
	}
	if !Verify(secret, body, r.Header.Get(HeaderSignature)) {
		return Event{}, ErrInvalidSignature
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		return Event{}, fmt.Errorf("webhook: decode body: %w", err)
	}
	return e, nil
}
