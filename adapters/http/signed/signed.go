// Package signed makes and checks the tokens the HTTP layer hands out and
// takes back unchanged: a payload with an HMAC-SHA256 tag, so a client can
// carry state (a pagination cursor, the join page's device cookie) that it
// can neither forge nor alter. It is the one place such a tag is computed
// and compared (in constant time), and the one place a token's key is
// derived from a deployment secret.
//
// Two wire forms, each the form of tokens already given out:
//
//   - Seal/Open: the payload followed by its tag, binary; the caller
//     encodes the whole (the cursors: base64url of payload and tag).
//   - Token/Verify: "<base64url payload>.<base64url tag>", the tag over the
//     encoded payload (the device cookie).
//
// No token carries an expiry: a cursor is good while its list is, and the
// cookie's lifetime is its Max-Age. One that needs an expiry puts it in its
// payload and checks it after Open or Verify.
package signed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Bounds of keys and tags. 128 bits of tag are plenty against forgery; a
// key shorter than 16 bytes is a configuration error, not a weak token.
const (
	MinKeyLen = 16
	MinTagLen = 16
	MaxTagLen = sha256.Size
)

// Signer tags payloads with one key. Every process of a deployment must
// build it from the same key, or a token made by one is refused by the
// others.
type Signer struct {
	key    []byte
	tagLen int
}

// New returns a signer keyed by key (at least MinKeyLen bytes) whose tags
// are the first tagLen bytes of the HMAC (MinTagLen to MaxTagLen).
func New(key []byte, tagLen int) (Signer, error) {
	if len(key) < MinKeyLen {
		return Signer{}, errors.New("signed: the key must be at least 16 bytes")
	}
	if tagLen < MinTagLen || tagLen > MaxTagLen {
		return Signer{}, errors.New("signed: a tag is 16 to 32 bytes")
	}
	return Signer{key: append([]byte(nil), key...), tagLen: tagLen}, nil
}

// Derive returns the key of one purpose from a deployment secret:
// HMAC-SHA256(secret, purpose). Tokens of two purposes derived from one
// secret never verify as each other, and no new setting is needed for a
// new kind of token.
func Derive(secret, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// tag is the payload's tag.
func (s Signer) tag(payload []byte) []byte {
	if len(s.key) == 0 {
		// The zero Signer must not sign with an empty key.
		panic("signed: Signer used without New")
	}
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return m.Sum(nil)[:s.tagLen]
}

// Seal appends payload's tag to payload (as append does: the result may
// share payload's array).
func (s Signer) Seal(payload []byte) []byte { return append(payload, s.tag(payload)...) }

// Open returns the payload of a sealed token (a slice of it), false when
// it is shorter than a tag or its tag is not the payload's.
func (s Signer) Open(sealed []byte) ([]byte, bool) {
	if len(sealed) < s.tagLen {
		return nil, false
	}
	payload, tag := sealed[:len(sealed)-s.tagLen], sealed[len(sealed)-s.tagLen:]
	if !hmac.Equal(tag, s.tag(payload)) {
		return nil, false
	}
	return payload, true
}

var enc = base64.RawURLEncoding

// Token returns "<payload>.<tag>", both base64url without padding, the tag
// over the encoded payload.
func (s Signer) Token(payload []byte) string {
	p := enc.EncodeToString(payload)
	return p + "." + enc.EncodeToString(s.tag([]byte(p)))
}

// Verify returns the payload of a token Token made, false when the token
// is longer than maxLen bytes, malformed, or its tag is not its payload's.
// The tag is compared as encoded, so no other spelling of it passes.
func (s Signer) Verify(token string, maxLen int) ([]byte, bool) {
	if len(token) > maxLen {
		return nil, false
	}
	p, tag, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(tag), []byte(enc.EncodeToString(s.tag([]byte(p))))) {
		return nil, false
	}
	b, err := enc.DecodeString(p)
	if err != nil {
		return nil, false
	}
	return b, true
}
