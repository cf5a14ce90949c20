package webhook_test

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	core "github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/webhook"
)

func TestSignMatchesTheService(t *testing.T) {
	secret := core.NewSecret()
	body := []byte(`{"id":"dlv_1","event":"turn.called","data":{"displayCode":"A-001"},"createdAt":"2026-03-01T09:00:00.000Z"}`)
	if got, want := webhook.Sign(secret.Reveal(), body), core.Sign(secret, body); got != want {
		t.Fatalf("receiver %s, service %s", got, want)
	}
	// RFC 4231 test case 2: HMAC-SHA256("Jefe", "what do ya want for nothing?").
	if got := webhook.Sign("Jefe", []byte("what do ya want for nothing?")); got != "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" {
		t.Fatalf("RFC 4231 vector: %s", got)
	}
}

func TestVerifyRefuses(t *testing.T) {
	body := []byte(`{"id":"dlv_1"}`)
	good := webhook.Sign("whsec_a", body)
	for name, sig := range map[string]string{
		"empty":         "",
		"no prefix":     strings.TrimPrefix(good, "sha256="),
		"other scheme":  "sha1=" + strings.TrimPrefix(good, "sha256="),
		"not hex":       "sha256=zz" + good[9:],
		"truncated":     good[:len(good)-2],
		"one bit off":   good[:len(good)-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", good[len(good)-1])+1)%16]),
		"other secret":  webhook.Sign("whsec_b", body),
		"prefix only":   "sha256=",
		"padded spaces": " " + good,
	} {
		if webhook.Verify("whsec_a", body, sig) {
			t.Errorf("%s: accepted %q", name, sig)
		}
	}
	if !webhook.Verify("whsec_a", body, good) {
		t.Error("the good signature is refused")
	}
}

func TestParse(t *testing.T) {
	body := []byte(`{"id":"dlv_1","event":"queue.closed","data":{"queueRunId":"run_1"},"createdAt":"2026-03-01T09:00:00.000Z"}`)
	req := httptest.NewRequest("POST", "/hook", bytes.NewReader(body))
	req.Header.Set(webhook.HeaderSignature, webhook.Sign("whsec_a", body))
	e, err := webhook.Parse(req, "whsec_a")
	if err != nil || e.ID != "dlv_1" || e.Event != "queue.closed" || string(e.Data) != `{"queueRunId":"run_1"}` || e.CreatedAt.Hour() != 9 {
		t.Fatalf("Parse = %+v, %v", e, err)
	}
	req = httptest.NewRequest("POST", "/hook", bytes.NewReader(body))
	req.Header.Set(webhook.HeaderSignature, webhook.Sign("whsec_b", body))
	if _, err := webhook.Parse(req, "whsec_a"); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Fatalf("forged: %v", err)
	}
	req = httptest.NewRequest("POST", "/hook", bytes.NewReader(make([]byte, webhook.MaxBodyBytes+1)))
	if _, err := webhook.Parse(req, "whsec_a"); !errors.Is(err, webhook.ErrBodyTooLarge) {
		t.Fatalf("huge body: %v", err)
	}
}
