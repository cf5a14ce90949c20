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
	// more are further accounts (AddAccount): SID → auth token.
	more map[string]string
}

// NewTwilio starts a fake Twilio for account sid with auth token token.
func NewTwilio(sid, token string) *Twilio {
	f := &Twilio{SID: sid, Token: token, more: map[string]string{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// AddAccount makes the fake serve another account (a business with its
// own Twilio account): its requests must carry its own SID and token.
func (f *Twilio) AddAccount(sid, token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.more[sid] = token
}

// tokenOf is the auth token of account sid, "" for an unknown one.
func (f *Twilio) tokenOf(sid string) string {
	if sid == f.SID {
		return f.Token
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.more[sid]
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
	account, ok := strings.CutPrefix(r.URL.Path, "/2010-04-01/Accounts/")
	account, ok2 := strings.CutSuffix(account, "/Messages.json")
	token := f.tokenOf(account)
	if r.Method != http.MethodPost || !ok || !ok2 || token == "" {
		return twilioErr(404, 20404, "The requested resource "+r.URL.Path+" was not found")
	}
	if u, p, ok := r.BasicAuth(); !ok || u != account || p != token {
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
	f.accept(Received{At: time.Now(), ID: sid, Account: account, Channel: channel, To: number, From: from, Body: form.Get("Body"),
		Template: form.Get("ContentSid"), StatusHook: form.Get("StatusCallback"), Sender: form.Get("MessagingServiceSid")})
	b, _ := json.Marshal(map[string]any{"sid": sid, "account_sid": account, "to": to, "from": from, "body": form.Get("Body"),
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

// StatusAs posts a status callback for message sid as account (its SID
// in AccountSid), signed with token: an account's own callback, or a
// forgery when token is another account's.
func (f *Twilio) StatusAs(hook, account, token, sid, status string) (int, error) {
	form := url.Values{"MessageSid": {sid}, "SmsSid": {sid}, "MessageStatus": {status}, "SmsStatus": {status},
		"AccountSid": {account}, "ApiVersion": {"2010-04-01"}}
	return f.signedPostWith(token, hook, form)
}

// ReplyAs posts an incoming message to account's sender, signed with token.
func (f *Twilio) ReplyAs(hook, account, token, from, body string) (int, error) {
	sid := f.nextID("SM")
	form := url.Values{"MessageSid": {sid}, "AccountSid": {account}, "From": {from}, "Body": {body}, "ApiVersion": {"2010-04-01"}}
	return f.signedPostWith(token, hook, form)
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
	return f.signedPostWith(f.Token, hook, form)
}

func (f *Twilio) signedPostWith(token, hook string, form url.Values) (int, error) {
	sig := notifier.TwilioSignature(token, hook, form)
	start := time.Now()
	status, answer, err := post(http.DefaultClient, hook, "application/x-www-form-urlencoded", form.Encode(),
		map[string]string{"X-Twilio-Signature": sig, "User-Agent": "TwilioProxy/1.1"})
	f.record(Exchange{Dir: "twilio→qms", Method: http.MethodPost, URL: hook, Header: "X-Twilio-Signature: " + sig,
		Body: form.Encode(), Status: status, Answer: answer, Elapsed: time.Since(start)})
	return status, err
}
