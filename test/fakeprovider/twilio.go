package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/qms-dev/qms/adapters/notifier"
)

// Twilio is a fake of Twilio Programmable Messaging's Messages resource.
type Twilio struct {
	base
	SID   string
	Token string
}

// NewTwilio starts a fake Twilio for account sid with auth token token.
func NewTwilio(sid, token string) *Twilio {
	f := &Twilio{SID: sid, Token: token}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *Twilio) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	raw, _ := io.ReadAll(r.Body)
	status, answer := f.answer(r, raw)
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(answer))
	user, _, _ := r.BasicAuth()
	f.record(Exchange{Dir: "qms→twilio", Method: r.Method, URL: r.URL.Path, Header: "Authorization: Basic " + user + ":***",
		Body: string(raw), Status: status, Answer: answer, Elapsed: time.Since(start)})
}

func twilioErr(status, code int, msg string) (int, string) {
	b, _ := json.Marshal(map[string]any{"code": code, "message": msg,
		"more_info": fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code), "status": status})
	return status, string(b)
}

func (f *Twilio) answer(r *http.Request, raw []byte) (int, string) {
	if r.Method != http.MethodPost || r.URL.Path != "/2010-04-01/Accounts/"+f.SID+"/Messages.json" {
		return twilioErr(404, 20404, "The requested resource "+r.URL.Path+" was not found")
	}
	if u, p, ok := r.BasicAuth(); !ok || u != f.SID || p != f.Token {
		return twilioErr(401, 20003, "Authenticate")
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return twilioErr(400, 20001, "the body must be a form")
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		return twilioErr(400, 20001, "malformed form")
	}
	to, from := form.Get("To"), form.Get("From")
	if to == "" {
		return twilioErr(400, 21604, "A 'To' phone number is required.")
	}
	if from == "" && form.Get("MessagingServiceSid") == "" {
		return twilioErr(400, 21603, "A 'From' phone number is required.")
	}
	if form.Get("Body") == "" && form.Get("ContentSid") == "" {
		return twilioErr(400, 21602, "Message body is required.")
	}
	if s := f.nextFailure(strings.TrimPrefix(to, "whatsapp:")); s != 0 {
		if s == 429 {
			return twilioErr(429, 20429, "Too Many Requests")
		}
		return twilioErr(s, 20500, "Internal Server Error")
	}
	channel := "SMS"
	number := to
	if n, ok := strings.CutPrefix(to, "whatsapp:"); ok {
		channel, number = "WHATSAPP", n
	}
	switch number {
	case InvalidNumber:
		return twilioErr(400, 21211, "The 'To' number "+number+" is not a valid phone number.")
	case OptedOutNumber:
		return twilioErr(400, 21610, "Attempt to send to unsubscribed recipient")
	case NotMobile:
		return twilioErr(400, 21614, "'To' number is not a valid mobile number")
	}
	sid := f.nextID("SM")
	f.accept(Received{At: time.Now(), ID: sid, Channel: channel, To: number, From: from, Body: form.Get("Body"),
		Template: form.Get("ContentSid"), StatusHook: form.Get("StatusCallback")})
	b, _ := json.Marshal(map[string]any{"sid": sid, "account_sid": f.SID, "to": to, "from": from, "body": form.Get("Body"),
		"status": "queued", "num_segments": "1", "direction": "outbound-api", "api_version": "2010-04-01",
		"error_code": nil, "error_message": nil, "uri": "/2010-04-01/Accounts/" + f.SID + "/Messages/" + sid + ".json"})
	return http.StatusCreated, string(b)
}

// Status posts a status callback for message sid to its StatusCallback,
// signed with X-Twilio-Signature; errorCode is "" for none.
func (f *Twilio) Status(hook, sid, status, errorCode string) (int, error) {
	var to string
	for _, m := range f.Messages() {
		if m.ID == sid {
			to = m.To
			if m.Channel == "WHATSAPP" {
				to = "whatsapp:" + to
			}
		}
	}
	form := url.Values{"MessageSid": {sid}, "SmsSid": {sid}, "MessageStatus": {status}, "SmsStatus": {status},
		"AccountSid": {f.SID}, "To": {to}, "From": {"+15005550006"}, "ApiVersion": {"2010-04-01"}}
	if errorCode != "" {
		form.Set("ErrorCode", errorCode)
	}
	return f.signedPost(hook, form)
}

// Reply posts an incoming message from a customer's number to hook, the
// sender's messaging webhook.
func (f *Twilio) Reply(hook, from, body string) (int, error) {
	sid := f.nextID("SM")
	form := url.Values{"MessageSid": {sid}, "SmsSid": {sid}, "AccountSid": {f.SID}, "From": {from}, "To": {"+15005550006"},
		"Body": {body}, "NumMedia": {"0"}, "NumSegments": {"1"}, "ApiVersion": {"2010-04-01"}, "SmsStatus": {"received"}}
	return f.signedPost(hook, form)
}

func (f *Twilio) signedPost(hook string, form url.Values) (int, error) {
	sig := notifier.TwilioSignature(f.Token, hook, form)
	start := time.Now()
	status, answer, err := post(http.DefaultClient, hook, "application/x-www-form-urlencoded", form.Encode(),
		map[string]string{"X-Twilio-Signature": sig, "User-Agent": "TwilioProxy/1.1"})
	f.record(Exchange{Dir: "twilio→qms", Method: http.MethodPost, URL: hook, Header: "X-Twilio-Signature: " + sig,
		Body: form.Encode(), Status: status, Answer: answer, Elapsed: time.Since(start)})
	return status, err
}
