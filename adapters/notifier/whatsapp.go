package notifier

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/qms-dev/qms/core/notify"
)

// DefaultWhatsAppURL is the Graph API that serves the Cloud API.
const DefaultWhatsAppURL = "https://graph.facebook.com"

// DefaultWhatsAppVersion is the Graph API version used when none is set.
const DefaultWhatsAppVersion = "v21.0"

// WhatsApp sends through the WhatsApp Business Cloud API: POST
// {base}/{version}/{phone-number-id}/messages, JSON, with a bearer token.
// Every message is a template message (qms_<moment> in the customer's
// language), the only kind allowed outside the 24-hour customer window.
type WhatsApp struct {
	BaseURL       string
	Version       string
	PhoneNumberID string
	Token         string
	Client        *http.Client
}

// Provider is "whatsapp".
func (w *WhatsApp) Provider() string { return "whatsapp" }

// whatsappLanguages are the template languages of ours (Meta's codes).
var whatsappLanguages = map[string]string{"en": "en", "es": "es", "pt": "pt_BR", "fr": "fr"}

type waTemplateMessage struct {
	MessagingProduct string     `json:"messaging_product"`
	RecipientType    string     `json:"recipient_type"`
	To               string     `json:"to"`
	Type             string     `json:"type"`
	Template         waTemplate `json:"template"`
}

type waTemplate struct {
	Name       string        `json:"name"`
	Language   waLanguage    `json:"language"`
	Components []waComponent `json:"components,omitempty"`
}

type waLanguage struct {
	Code string `json:"code"`
}

type waComponent struct {
	Type       string    `json:"type"`
	Parameters []waParam `json:"parameters"`
}

type waParam struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// waError is the Graph API's error body.
type waError struct {
	Error struct {
		Message   string `json:"message"`
		Type      string `json:"type"`
		Code      int    `json:"code"`
		ErrorData struct {
			Details string `json:"details"`
		} `json:"error_data"`
		FBTraceID string `json:"fbtrace_id"`
	} `json:"error"`
}

// Send posts one template message.
func (w *WhatsApp) Send(ctx context.Context, out notify.Outgoing) (notify.Receipt, error) {
	msg := waTemplateMessage{MessagingProduct: "whatsapp", RecipientType: "individual", To: out.To, Type: "template",
		Template: waTemplate{Name: out.Template, Language: waLanguage{Code: orDefault(out.TemplateLanguage, orDefault(whatsappLanguages[out.Language], "en"))}}}
	if len(out.Params) > 0 {
		c := waComponent{Type: "body"}
		for _, p := range out.Params {
			c.Parameters = append(c.Parameters, waParam{Type: "text", Text: p})
		}
		msg.Template.Components = []waComponent{c}
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return notify.Receipt{}, fmt.Errorf("notifier: whatsapp body: %w", err)
	}
	base := strings.TrimSuffix(orDefault(w.BaseURL, DefaultWhatsAppURL), "/")
	u := base + "/" + orDefault(w.Version, DefaultWhatsAppVersion) + "/" + url.PathEscape(w.PhoneNumberID) + "/messages"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return notify.Receipt{}, fmt.Errorf("notifier: whatsapp request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+w.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client(w.Client).Do(req)
	if err != nil {
		return notify.Receipt{}, unreachable(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		var ok struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(rb, &ok); err != nil || len(ok.Messages) == 0 || ok.Messages[0].ID == "" {
			return notify.Receipt{}, &notify.SendError{Code: notify.ErrRejected, Message: "whatsapp answered no message id", HTTPStatus: resp.StatusCode, Retryable: true}
		}
		return notify.Receipt{ProviderMessageID: ok.Messages[0].ID}, nil
	}
	var we waError
	_ = json.Unmarshal(rb, &we)
	se := &notify.SendError{Message: strings.TrimSpace(we.Error.Message + " " + we.Error.ErrorData.Details)}
	if we.Error.Code != 0 {
		se.ProviderCode = strconv.Itoa(we.Error.Code)
	} else {
		se.Message = strings.TrimSpace(string(rb))
	}
	switch we.Error.Code {
	case 131026, 131021, 133010:
		// Undeliverable (not a WhatsApp user, an old app), sender and
		// recipient the same, number not registered.
		se.Code = notify.ErrInvalidNumber
	case 131050:
		// The user stopped marketing messages from the business.
		se.Code = notify.ErrOptedOut
	case 4, 80007, 130429, 131048, 131056, 1, 2, 131000, 131016:
		// Rate limits (app, account, throughput, spam, pair) and
		// temporary failures: later may work.
		se.Retryable = true
	}
	return notify.Receipt{}, classify(resp, se)
}

// WhatsAppStatus maps a status webhook's status to ours.
func WhatsAppStatus(s string) string {
	switch s {
	case "sent":
		return notify.StatusSent
	case "delivered":
		return notify.StatusDelivered
	case "read":
		return notify.StatusRead
	case "failed":
		return notify.StatusFailed
	}
	return ""
}

// WhatsAppSignature is X-Hub-Signature-256 for body: "sha256=" and the
// hex HMAC-SHA256 of the raw body keyed with the app secret.
func WhatsAppSignature(appSecret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(appSecret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// VerifyWhatsApp reports whether sig is Meta's signature of body.
func VerifyWhatsApp(appSecret string, body []byte, sig string) bool {
	if sig == "" || appSecret == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(WhatsAppSignature(appSecret, body)), []byte(sig)) == 1
}

// WhatsAppWebhook is the body of a Cloud API webhook (the messages
// field): statuses of sent messages and messages customers sent.
type WhatsAppWebhook struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string `json:"field"`
			Value struct {
				MessagingProduct string `json:"messaging_product"`
				Statuses         []struct {
					ID          string `json:"id"`
					Status      string `json:"status"`
					Timestamp   string `json:"timestamp"`
					RecipientID string `json:"recipient_id"`
					Errors      []struct {
						Code  int    `json:"code"`
						Title string `json:"title"`
					} `json:"errors"`
				} `json:"statuses"`
				Messages []struct {
					From string `json:"from"`
					ID   string `json:"id"`
					Type string `json:"type"`
					Text *struct {
						Body string `json:"body"`
					} `json:"text"`
					Button *struct {
						Text string `json:"text"`
					} `json:"button"`
				} `json:"messages"`
			} `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}
