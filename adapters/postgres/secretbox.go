package postgres

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// secretBox seals secrets at rest with AES-256-GCM under a key derived
// from webhooks.secret_key (QMS_WEBHOOKS_SECRET_KEY) for one purpose, and
// opens those sealed under the key or an older one (webhooks.old_secret_keys).
// Webhook signing secrets and the accounts' messaging credentials share
// the configured key and this code; each purpose derives its own AES key,
// so a value sealed for one never opens as the other. Without a key
// (adapter tests only: configuration requires one in postgres mode)
// values are stored in clear, marked plain:.
type secretBox struct {
	aeads []cipher.AEAD // [0] seals and opens; the rest (older keys) only open
}

// Errors of opening a stored secret.
var (
	errNoSecretKey     = errors.New("the secret is sealed and QMS_WEBHOOKS_SECRET_KEY is not set")
	errSecretFormat    = errors.New("unknown secret format")
	errSecretMalformed = errors.New("malformed sealed secret")
	errSecretNoKey     = errors.New("no configured key (QMS_WEBHOOKS_SECRET_KEY, QMS_WEBHOOKS_OLD_SECRET_KEYS) opens the secret")
)

func newSecretBox(purpose, key string, oldKeys ...string) (secretBox, error) {
	var b secretBox
	if key == "" {
		return b, nil
	}
	for _, k := range append([]string{key}, oldKeys...) {
		// Derive rather than use the configured string, so the AES key is
		// always 32 uniform bytes and is tied to this one use.
		m := hmac.New(sha256.New, []byte(k))
		m.Write([]byte(purpose))
		block, err := aes.NewCipher(m.Sum(nil))
		if err != nil {
			return b, fmt.Errorf("postgres: secret key: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return b, fmt.Errorf("postgres: secret key: %w", err)
		}
		b.aeads = append(b.aeads, aead)
	}
	return b, nil
}

// sealing reports whether the box seals (a key is configured).
func (b secretBox) sealing() bool { return len(b.aeads) > 0 }

// seal stores plain for the row named by aad: the additional data of the
// seal, so a sealed value copied onto another row fails to open.
func (b secretBox) seal(aad, plain string) string {
	if len(b.aeads) == 0 {
		return secretPlain + plain
	}
	aead := b.aeads[0]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce)
	sealed := aead.Seal(nonce, nonce, []byte(plain), []byte(aad))
	return secretSealedV1 + base64.RawStdEncoding.EncodeToString(sealed)
}

// open reads a stored value back and says which key opened it: 0 for the
// current one, -1 for a value stored in clear.
func (b secretBox) open(aad, stored string) (string, int, error) {
	if s, ok := strings.CutPrefix(stored, secretPlain); ok {
		return s, -1, nil
	}
	s, ok := strings.CutPrefix(stored, secretSealedV1)
	if !ok {
		return "", 0, errSecretFormat
	}
	if len(b.aeads) == 0 {
		return "", 0, errNoSecretKey
	}
	sealed, err := base64.RawStdEncoding.DecodeString(s)
	n := b.aeads[0].NonceSize()
	if err != nil || len(sealed) < n {
		return "", 0, errSecretMalformed
	}
	for i, aead := range b.aeads {
		if plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(aad)); err == nil {
			return string(plain), i, nil
		}
	}
	return "", 0, errSecretNoKey
}
