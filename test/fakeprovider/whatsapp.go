package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/qms-dev/qms/adapters/notifier"
)

// WhatsApp is a fake of the WhatsApp Business Cloud API's messages
// endpoint and of its webhooks.
type WhatsApp struct {
	base
	Version       string
	PhoneNumberID string
	Token         string
	AppSecret     string
}

// NewWhatsApp starts a fake Cloud API for a business phone number id.
func NewWhatsApp(version, phoneNumberID, token, appSecret string) *WhatsApp {
	f := &WhatsApp{Version: version, PhoneNumberID: phoneNumberID, Token: token, AppSecret: appSecret}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *WhatsApp) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	raw, _ := io.ReadAll(r.Body)
	status, answer := f.answer(r, raw)
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(answer))
	f.record(Exchange{Dir: "qms→whatsapp", Method: r.Method, URL: r.URL.Path, Header: "Authorization: Bearer ***",
		Body: string(raw), Status: status, Answer: answer, Elapsed: time.Since(start)})
}

func waErr(status, code int, msg, details string) (int, string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": fmt.Sprintf("(#%d) %s", code, msg),
		"type": "OAuthException", "code": code, "error_data": map[string]any{"messaging_product": "whatsapp", "details": details},
		"fbtrace_id": "AfakeTrace"}})
	return status, string(b)
}

func (f *WhatsApp) answer(r *http.Request, raw []byte) (int, string) {
	if r.Method != http.MethodPost || r.URL.Path != "/"+f.Version+"/"+f.PhoneNumberID+"/messages" {
		return waErr(400, 100, "Unsupported post request", "no such endpoint "+r.URL.Path)
	}
	if r.Header.Get("Authorization") != "Bearer "+f.Token {
		return waErr(401, 190, "Invalid OAuth access token", "the access token is not valid")
	}
	var m struct {
		MessagingProduct string `json:"messaging_product"`
		To               string `json:"to"`
		Type             string `json:"type"`
		Template         *struct {
			Name     string `json:"name"`
			Language struct {
				Code string `json:"code"`
			} `json:"language"`
			Components []struct {
				Type       string `json:"type"`
				Parameters []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"parameters"`
			} `json:"components"`
		} `json:"template"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.MessagingProduct != "whatsapp" || m.To == "" {
		return waErr(400, 100, "Invalid parameter", "messaging_product must be whatsapp and to is required")
	}
	if m.Type != "template" || m.Template == nil || m.Template.Name == "" || m.Template.Language.Code == "" {
		// Outside the 24-hour window only templates may be sent.
		return waErr(400, 131047, "Re-engagement message", "more than 24 hours have passed since the customer last replied")
	}
	if s := f.nextFailure(m.To); s != 0 {
		if s == 429 {
			return waErr(429, 130429, "Rate limit hit", "Cloud API message throughput has been reached.")
		}
		return waErr(s, 131000, "Something went wrong", "temporary failure")
	}
	switch m.To {
	case InvalidNumber, NotMobile:
		return waErr(400, 131026, "Message undeliverable", "the recipient is not a WhatsApp user")
	case OptedOutNumber:
		return waErr(400, 131050, "Unable to deliver the message", "the user stopped marketing messages from the business")
	}
	var params []string
	for _, c := range m.Template.Components {
		for _, p := range c.Parameters {
			params = append(params, p.Text)
		}
	}
	id := f.nextID("wamid.")
	f.accept(Received{At: time.Now(), ID: id, Channel: "WHATSAPP", To: m.To, Template: m.Template.Name,
		Language: m.Template.Language.Code, Params: params})
	b, _ := json.Marshal(map[string]any{"messaging_product": "whatsapp",
		"contacts": []any{map[string]any{"input": m.To, "wa_id": strings.TrimPrefix(m.To, "+")}},
		"messages": []any{map[string]any{"id": id, "message_status": "accepted"}}})
	return http.StatusOK, string(b)
}

// Status posts a status webhook for message id to hook, signed with
// X-Hub-Signature-256; errorCode 0 for none.
func (f *WhatsApp) Status(hook, id, status string, errorCode int) (int, error) {
	var to string
	for _, m := range f.Messages() {
		if m.ID == id {
			to = strings.TrimPrefix(m.To, "+")
		}
	}
	st := map[string]any{"id": id, "status": status, "timestamp": fmt.Sprint(time.Now().Unix()), "recipient_id": to}
	if errorCode != 0 {
		st["errors"] = []any{map[string]any{"code": errorCode, "title": "Message undeliverable"}}
	}
	return f.hook(hook, map[string]any{"messaging_product": "whatsapp",
		"metadata": map[string]any{"display_phone_number": "15550001111", "phone_number_id": f.PhoneNumberID},
		"statuses": []any{st}})
}

// Reply posts a customer's text message to hook.
func (f *WhatsApp) Reply(hook, from, text string) (int, error) {
	return f.hook(hook, map[string]any{"messaging_product": "whatsapp",
		"metadata": map[string]any{"display_phone_number": "15550001111", "phone_number_id": f.PhoneNumberID},
		"contacts": []any{map[string]any{"profile": map[string]any{"name": "Customer"}, "wa_id": strings.TrimPrefix(from, "+")}},
		"messages": []any{map[string]any{"from": strings.TrimPrefix(from, "+"), "id": f.nextID("wamid."),
			"timestamp": fmt.Sprint(time.Now().Unix()), "type": "text", "text": map[string]any{"body": text}}}})
}

func (f *WhatsApp) hook(hook string, value map[string]any) (int, error) {
	body, _ := json.Marshal(map[string]any{"object": "whatsapp_business_account",
		"entry": []any{map[string]any{"id": "WABA_ID", "changes": []any{map[string]any{"field": "messages", "value": value}}}}})
	sig := notifier.WhatsAppSignature(f.AppSecret, body)
	start := time.Now()
	status, answer, err := post(http.DefaultClient, hook, "application/json", string(body), map[string]string{"X-Hub-Signature-256": sig})
	f.record(Exchange{Dir: "whatsapp→qms", Method: http.MethodPost, URL: hook, Header: "X-Hub-Signature-256: " + sig,
		Body: string(body), Status: status, Answer: answer, Elapsed: time.Since(start)})
	return status, err
}

// Verify makes Meta's GET verification request to hook with token, and
// returns the status and the body (the challenge when accepted).
func (f *WhatsApp) Verify(hook, token, challenge string) (int, string, error) {
	u := hook + "?hub.mode=subscribe&hub.verify_token=" + token + "&hub.challenge=" + challenge
	resp, err := http.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	f.record(Exchange{Dir: "whatsapp→qms", Method: http.MethodGet, URL: u, Status: resp.StatusCode, Answer: string(b)})
	return resp.StatusCode, string(b), nil
}
