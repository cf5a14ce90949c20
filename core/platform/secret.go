package platform

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
)

// A secret is a bearer value qms hands out once (API keys, display tokens,
// ticket links): a prefix naming its kind and 32 lowercase base32
// characters (160 random bits). It is stored only as its hash.

const secretChars = 32

// NewSecret returns prefix followed by 160 random bits in lowercase base32.
func NewSecret(prefix string) string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("platform: no randomness: " + err.Error())
	}
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// HashSecret is how a secret is stored and looked up: SHA-256, hex. The
// values carry 160 random bits, so a fast unsalted hash is safe, and a
// lookup stays one index probe.
func HashSecret(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// LooksLikeSecret reports whether s has the shape NewSecret(prefix) gives,
// so anything else is refused without a lookup.
func LooksLikeSecret(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != secretChars {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}
