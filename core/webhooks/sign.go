package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// SignaturePrefix leads the X-Service-Signature header.
const SignaturePrefix = "sha256="

// NewSecret returns a fresh signing secret: SecretPrefix and 32 random bytes
// in unpadded base64url (256 bits, the size of the HMAC-SHA256 key).
func NewSecret() Secret {
	b := make([]byte, 32)
	// crypto/rand.Read never fails on the supported platforms (Go 1.24+).
	_, _ = rand.Read(b)
	return Secret(SecretPrefix + base64.RawURLEncoding.EncodeToString(b))
}

// Sign returns the X-Service-Signature of body: "sha256=" and the lowercase
// hex HMAC-SHA256 of the exact bytes, keyed with the whole secret string
// (whsec_ prefix included), as receivers and third-party verifiers such as
// @octokit/webhooks-methods compute it.
func Sign(secret Secret, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return SignaturePrefix + hex.EncodeToString(m.Sum(nil))
}

// newToken returns an unguessable token naming one scheduled attempt.
func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
