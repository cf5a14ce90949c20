package notifier

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/qms-dev/qms/core/notify"
)

// DefaultTwilioURL is Twilio's REST API.
const DefaultTwilioURL = "https://api.twilio.com"

// Twilio sends through Twilio Programmable Messaging: POST
// {base}/2010-04-01/Accounts/{AccountSid}/Messages.json, a form, with
// HTTP basic auth (the account SID and its auth token). WhatsApp goes
// through the same endpoint with whatsapp:-prefixed numbers.
type Twilio struct {
	BaseURL    string
	AccountSID string
	AuthToken  string
	// From is the SMS sender (a number or an alphanumeric id);
	// MessagingServiceSID, when set, sends through a messaging service
	// instead. WhatsAppFrom is the WhatsApp sender's number.
	From                string
	MessagingServiceSID string
	WhatsAppFrom        string
	// StatusCallback is where Twilio posts the message's statuses.
	StatusCallback string
	// ContentSIDs maps "moment:language" to an approved Content template
	// (HX...), sent with ContentVariables instead of a Body: WhatsApp
	// outside the customer's 24-hour window takes only templates.
	ContentSIDs map[string]string
	Client      *http.Client
}

// Provider is "twilio".
func (t *Twilio) Provider() string { return "twilio" }

// twilioError is Twilio's error body.
type twilioError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

// Send posts one message.
func (t *Twilio) Send(ctx context.Context, out notify.Outgoing) (notify.Receipt, error) {
	form := url.Values{}
	to, from := out.To, t.From
	if out.Channel == notify.ChannelWhatsApp {
		to, from = "whatsapp:"+out.To, "whatsapp:"+t.WhatsAppFrom
	}
	form.Set("To", to)
	if t.MessagingServiceSID != "" && out.Channel == notify.ChannelSMS {
		form.Set("MessagingServiceSid", t.MessagingServiceSID)
	} else {
		form.Set("From", from)
	}
	if sid := t.ContentSIDs[out.Template+":"+out.Language]; sid != "" && out.Channel == notify.ChannelWhatsApp {
		vars := map[string]string{}
		for i, p := range out.Params {
			vars[strconv.Itoa(i+1)] = p
		}
		b, _ := json.Marshal(vars)
		form.Set("ContentSid", sid)
		form.Set("ContentVariables", string(b))
	} else {
		form.Set("Body", out.Body)
	}
	if t.StatusCallback != "" {
		form.Set("StatusCallback", t.StatusCallback)
	}
	base := strings.TrimSuffix(orDefault(t.BaseURL, DefaultTwilioURL), "/")
	u := base + "/2010-04-01/Accounts/" + url.PathEscape(t.AccountSID) + "/Messages.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return notify.Receipt{}, fmt.Errorf("notifier: twilio request: %w", err)
	}
	req.SetBasicAuth(t.AccountSID, t.AuthToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := client(t.Client).Do(req)
	if err != nil {
		return notify.Receipt{}, unreachable(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		var ok struct {
			SID string `json:"sid"`
		}
		if err := json.Unmarshal(body, &ok); err != nil || ok.SID == "" {
			return notify.Receipt{}, &notify.SendError{Code: notify.ErrRejected, Message: "twilio answered no message sid", HTTPStatus: resp.StatusCode, Retryable: true}
		}
		return notify.Receipt{ProviderMessageID: ok.SID}, nil
	}
	var te twilioError
	_ = json.Unmarshal(body, &te)
	se := &notify.SendError{Message: te.Message, ProviderCode: strconv.Itoa(te.Code)}
	if te.Code == 0 {
		se.ProviderCode, se.Message = "", strings.TrimSpace(string(body))
	}
	switch te.Code {
	case 21211, 21614, 21217, 21408, 21612, 63003:
		// Invalid 'To', not a mobile number, not reachable from this
		// sender, region not enabled, not a WhatsApp user.
		se.Code = notify.ErrInvalidNumber
	case 21610:
		// The recipient replied STOP to this sender.
		se.Code = notify.ErrOptedOut
	case 20429:
		se.Retryable = true
	}
	return notify.Receipt{}, classify(resp, se)
}

// TwilioStatus maps a status callback's MessageStatus to ours ("" for the
// interim ones: accepted, queued, sending, scheduled).
func TwilioStatus(s string) string {
	switch s {
	case "sent":
		return notify.StatusSent
	case "delivered":
		return notify.StatusDelivered
	case "read":
		return notify.StatusRead
	case "undelivered":
		return notify.StatusUndelivered
	case "failed", "canceled":
		return notify.StatusFailed
	}
	return ""
}

// TwilioSignature is X-Twilio-Signature for a POST to fullURL with form
// params: base64 of the HMAC-SHA1, keyed with the auth token, of the URL
// followed by every parameter's name and value, sorted by name.
func TwilioSignature(authToken, fullURL string, params url.Values) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(fullURL)
	for _, k := range keys {
		vs := append([]string(nil), params[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyTwilio reports whether sig is Twilio's signature of the request.
func VerifyTwilio(authToken, fullURL string, params url.Values, sig string) bool {
	if sig == "" || authToken == "" {
		return false
	}
	want := TwilioSignature(authToken, fullURL, params)
	return subtle.ConstantTimeCompare([]byte(want), []byte(sig)) == 1
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func client(c *http.Client) *http.Client {
	if c == nil {
		return &http.Client{Timeout: Timeout}
	}
	return c
}
