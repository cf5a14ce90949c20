package notifier_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/qms-dev/qms/adapters/notifier"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/test/fakeprovider"
)

// refusal is what a send to a number, or after FailNext, must end in.
type refusal struct {
	name      string
	to        string
	fail      int
	code      string
	retryable bool
}

var refusals = []refusal{
	{"invalid number", fakeprovider.InvalidNumber, 0, notify.ErrInvalidNumber, false},
	{"opted out", fakeprovider.OptedOutNumber, 0, notify.ErrOptedOut, false},
	{"rate limited", "+34600111222", http.StatusTooManyRequests, notify.ErrRejected, true},
	{"server error", "+34600111222", http.StatusInternalServerError, notify.ErrRejected, true},
	{"unavailable", "+34600111222", http.StatusServiceUnavailable, notify.ErrRejected, true},
}

func check(t *testing.T, s notify.Sender, fail func(status, n int), out notify.Outgoing, r refusal) {
	t.Helper()
	if r.fail != 0 {
		fail(r.fail, 1)
	}
	out.To = r.to
	_, err := s.Send(context.Background(), out)
	var se *notify.SendError
	if !errors.As(err, &se) || se.Code != r.code || se.Retryable != r.retryable || se.ProviderCode == "" {
		t.Fatalf("%s: %#v (%v)", r.name, se, err)
	}
}

func TestTwilioSendsAndClassifiesRefusals(t *testing.T) {
	fake := fakeprovider.NewTwilio("AC1", "token")
	defer fake.Close()
	tw := &notifier.Twilio{BaseURL: fake.URL(), AccountSID: "AC1", AuthToken: "token", From: "+15005550006",
		WhatsAppFrom: "+14155238886", StatusCallback: "https://qms.example/notify/twilio/status"}
	out := notify.Outgoing{MessageID: "ntf_1", Channel: notify.ChannelSMS, To: "+34600111222", Body: "Counter: it is your turn"}
	r, err := tw.Send(context.Background(), out)
	if err != nil || r.ProviderMessageID == "" {
		t.Fatalf("send: %+v %v", r, err)
	}
	out.Channel = notify.ChannelWhatsApp
	if _, err := tw.Send(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	got := fake.Messages()
	if len(got) != 2 || got[0].Channel != "SMS" || got[0].Body != out.Body || got[0].From != "+15005550006" ||
		got[0].StatusHook != tw.StatusCallback || got[1].Channel != "WHATSAPP" || got[1].From != "whatsapp:+14155238886" {
		t.Fatalf("received: %+v", got)
	}
	for _, r := range refusals {
		check(t, tw, fake.FailNext, notify.Outgoing{Channel: notify.ChannelSMS, Body: "x"}, r)
	}
	bad := *tw
	bad.AuthToken = "wrong"
	if _, err := bad.Send(context.Background(), out); err == nil {
		t.Fatal("a wrong auth token was accepted")
	}
}

// TestTwilioSignature checks the algorithm against Twilio's documented
// example (docs: "Secure your webhooks", the signature of a sample
// request to https://mycompany.com/myapp.php?foo=1&bar=2).
func TestTwilioSignature(t *testing.T) {
	params := url.Values{"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+12349013030"}, "Digits": {"1234"},
		"From": {"+12349013030"}, "To": {"+18005551212"}}
	const u = "https://mycompany.com/myapp.php?foo=1&bar=2"
	sig := notifier.TwilioSignature("12345", u, params)
	if sig != "0/KCTR6DLpKmkAf8muzZqo1nDgQ=" {
		t.Fatalf("signature %s", sig)
	}
	if !notifier.VerifyTwilio("12345", u, params, sig) || notifier.VerifyTwilio("12345", u+"&x=1", params, sig) {
		t.Fatal("verification")
	}
}

func TestWhatsAppSendsTemplatesAndClassifiesRefusals(t *testing.T) {
	fake := fakeprovider.NewWhatsApp("v21.0", "106540352242922", "token", "secret")
	defer fake.Close()
	wa := &notifier.WhatsApp{BaseURL: fake.URL(), Version: "v21.0", PhoneNumberID: "106540352242922", Token: "token"}
	out := notify.Outgoing{MessageID: "ntf_1", Channel: notify.ChannelWhatsApp, To: "+34600111222", Template: "qms_called",
		Language: "pt", Params: []string{"Counter", "A1", "Desk 1"}}
	r, err := wa.Send(context.Background(), out)
	if err != nil || r.ProviderMessageID == "" {
		t.Fatalf("send: %+v %v", r, err)
	}
	got := fake.Messages()
	if len(got) != 1 || got[0].Template != "qms_called" || got[0].Language != "pt_BR" || len(got[0].Params) != 3 || got[0].Params[2] != "Desk 1" {
		t.Fatalf("received: %+v", got)
	}
	for _, r := range refusals {
		check(t, wa, fake.FailNext, out, r)
	}
	body := []byte(`{"object":"whatsapp_business_account"}`)
	sig := notifier.WhatsAppSignature("secret", body)
	if !notifier.VerifyWhatsApp("secret", body, sig) || notifier.VerifyWhatsApp("other", body, sig) || notifier.VerifyWhatsApp("secret", body, "") {
		t.Fatal("verification")
	}
}
