package signed_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/qms-dev/qms/adapters/http/signed"
)

// Tokens given out before this package existed (made by the code it
// replaced, httpx's cursors and joinhttp's device cookie, with these
// secrets): they must keep verifying, so the wire forms never change.
const (
	goldenSecret = "golden-cursor-secret-0123456789ab"
	goldenCursor = "AShydW5zAC9hcGkvdjEvcXVldWVzL3FfMS9ydW5zAHN0YXR1cz1PUEVOCmFjY19nb2xkZW4yMDI2LTExLTI2VDE4OjAwOjAwWgBydW5fMbyCtFMPWGAc8kMDin1I0sE"
	goldenCookie = "eyJxIjpbeyJpIjoicXVlXzEiLCJ0IjpbInRybl8xIiwidHJuXzIiXX1dfQ.qev0_rzVMWrA8IKkXqNZeLfm1nZQ86E0tElWoLZJhKc"
	// goldenCookieKey is HMAC-SHA256(goldenSecret, "qms join device cookie").
	goldenCookieKey = "41f9eb2b25d9f882f64331ae4fe59abd5e2db6fe942b0d2ef91b413140675923"
	// goldenCursorKey is HMAC-SHA256(goldenAdmin, "qms pagination cursors").
	goldenAdmin     = "golden-admin-token-0123456789abcdef"
	goldenCursorKey = "fd99767cec0a1dfea08d4a0e9e46ac69b6268dd89e17e419b54198facb1029d6"
)

func mustNew(t *testing.T, key []byte, tagLen int) signed.Signer {
	t.Helper()
	s, err := signed.New(key, tagLen)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOldTokensStillVerify(t *testing.T) {
	if got := hex.EncodeToString(signed.Derive(goldenSecret, "qms join device cookie")); got != goldenCookieKey {
		t.Fatalf("cookie key %s; want %s", got, goldenCookieKey)
	}
	if got := hex.EncodeToString(signed.Derive(goldenAdmin, "qms pagination cursors")); got != goldenCursorKey {
		t.Fatalf("cursor key %s; want %s", got, goldenCursorKey)
	}
	cookies := mustNew(t, signed.Derive(goldenSecret, "qms join device cookie"), signed.MaxTagLen)
	p, ok := cookies.Verify(goldenCookie, 4096)
	if !ok || string(p) != `{"q":[{"i":"que_1","t":["trn_1","trn_2"]}]}` {
		t.Fatalf("old cookie: %q %v", p, ok)
	}
	if again := cookies.Token(p); again != goldenCookie {
		t.Fatalf("the cookie's form changed:\n%s\n%s", again, goldenCookie)
	}
	cursors := mustNew(t, []byte(goldenSecret), 16)
	raw, err := base64.RawURLEncoding.DecodeString(goldenCursor)
	if err != nil {
		t.Fatal(err)
	}
	p, ok = cursors.Open(raw)
	if !ok || !bytes.Contains(p, []byte("acc_golden")) {
		t.Fatalf("old cursor: %q %v", p, ok)
	}
	if again := base64.RawURLEncoding.EncodeToString(cursors.Seal(bytes.Clone(p))); again != goldenCursor {
		t.Fatalf("the cursor's form changed:\n%s\n%s", again, goldenCursor)
	}
}

func TestTamperedOrWronglyKeyedTokensFail(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	s := mustNew(t, key, 16)
	other := mustNew(t, []byte("fedcba9876543210fedcba9876543210"), 16)
	payload := []byte("account=acc_1;after=42")

	sealed := s.Seal(bytes.Clone(payload))
	if p, ok := s.Open(sealed); !ok || !bytes.Equal(p, payload) {
		t.Fatalf("open: %q %v", p, ok)
	}
	for i := range sealed {
		b := bytes.Clone(sealed)
		b[i] ^= 1
		if _, ok := s.Open(b); ok {
			t.Fatalf("a sealed token with byte %d flipped opens", i)
		}
	}
	if _, ok := other.Open(sealed); ok {
		t.Fatal("another key opens the token")
	}
	if _, ok := s.Open(sealed[:15]); ok {
		t.Fatal("a token shorter than a tag opens")
	}
	if _, ok := s.Open(sealed[1:]); ok {
		t.Fatal("a truncated token opens")
	}

	tok := s.Token(payload)
	if p, ok := s.Verify(tok, 4096); !ok || !bytes.Equal(p, payload) {
		t.Fatalf("verify: %q %v", p, ok)
	}
	if _, ok := other.Verify(tok, 4096); ok {
		t.Fatal("another key verifies the token")
	}
	for i := range tok {
		if tok[i] == '.' {
			continue
		}
		b := []byte(tok)
		b[i] ^= 1
		if p, ok := s.Verify(string(b), 4096); ok {
			t.Fatalf("a token with byte %d flipped verifies: %q", i, p)
		}
	}
	body, tag, _ := strings.Cut(tok, ".")
	for _, bad := range []string{body, body + ".", "." + tag, body + "." + tag + "A", body + "A." + tag, ""} {
		if _, ok := s.Verify(bad, 4096); ok {
			t.Fatalf("%q verifies", bad)
		}
	}
	// A tag's other spelling (different unused low bits) is refused: the
	// tag is compared as written.
	last := tag[len(tag)-1]
	for _, c := range "AEIMQUYcgkosw048" {
		if byte(c) != last {
			if _, ok := s.Verify(body+"."+tag[:len(tag)-1]+string(c), 4096); ok {
				t.Fatalf("tag spelled with last char %c verifies", c)
			}
		}
	}
	// The same key with a longer tag makes other tokens.
	if _, ok := mustNew(t, key, 32).Open(sealed); ok {
		t.Fatal("a 16-byte tag opens as a 32-byte one")
	}
}

func TestLengthBounds(t *testing.T) {
	if _, err := signed.New([]byte("fifteen bytes!!"), 16); err == nil {
		t.Fatal("a 15-byte key is taken")
	}
	for _, n := range []int{0, 15, 33} {
		if _, err := signed.New([]byte("0123456789abcdef"), n); err == nil {
			t.Fatalf("a %d-byte tag is taken", n)
		}
	}
	s := mustNew(t, []byte("0123456789abcdef"), 32)
	tok := s.Token(bytes.Repeat([]byte("x"), 100))
	if _, ok := s.Verify(tok, len(tok)); !ok {
		t.Fatal("a token of exactly maxLen is refused")
	}
	if _, ok := s.Verify(tok, len(tok)-1); ok {
		t.Fatal("a token over maxLen verifies")
	}
	// A caller's key is copied: changing it later changes nothing.
	key := []byte("0123456789abcdef")
	k := mustNew(t, key, 16)
	sealed := k.Seal([]byte("p"))
	key[0] = 'X'
	if _, ok := k.Open(sealed); !ok {
		t.Fatal("the signer kept the caller's slice")
	}
}

func TestZeroSignerPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("the zero Signer signed")
		}
	}()
	var s signed.Signer
	s.Seal([]byte("p"))
}
