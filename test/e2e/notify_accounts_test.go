package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/qms-dev/qms/adapters/http/notifyhttp"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/fakeprovider"
	"github.com/qms-dev/qms/test/pgtest"
)

// Two businesses' own Twilio accounts (the operator's is ntSID).
const (
	naSIDA   = "AC0000000000000000000000000000000a"
	naTokenA = "token-of-business-a-0123456789"
	naSIDB   = "AC0000000000000000000000000000000b"
	naTokenB = "token-of-business-b-9876543210"
	naMGB    = "MG000000000000000000000000000000bb"
)

// naAccount is a world of the second account on the same process.
func naAccount(t *testing.T, w *turnWorld) *turnWorld {
	t.Helper()
	app := *w.app
	app.AccountID, app.Key = w.app.NewAccount("premium", "all")
	b := &turnWorld{t: t, app: &app}
	var e struct {
		ID string `json:"id"`
	}
	app.API(http.MethodPost, "/entities", map[string]any{"name": "Bakery"}).Must(http.StatusCreated, &e)
	b.entity = e.ID
	return b
}

// TestNotifyAccountProviders: two accounts bring their own Twilio
// accounts; each account's messages reach the provider with its own SID,
// token and sender, in its own wording; a read never shows a secret and
// the stored row holds none in clear; a callback on an account's path
// signed with another account's token is refused, and one signed by
// another account cannot touch its messages; bad settings are refused
// naming each field.
func TestNotifyAccountProviders(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		fake.AddAccount(naSIDA, naTokenA)
		fake.AddAccount(naSIDB, naTokenB)
		a := turnStart(t, start, ntTwilio(fake.URL()))
		b := naAccount(t, a)

		// Bad input: 400 naming every field.
		r := a.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{
			"sms": "pigeon", "sendRate": 0,
			"twilio":     map[string]any{"accountSid": "nope", "from": "not a sender!"},
			"quietHours": map[string]any{"timezone": "Mars/Olympus", "start": "25:00", "end": "08:00"},
			"templates":  []any{map[string]any{"moment": "called", "language": "de", "smsText": "{code} {secret}"}},
		})
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		named := map[string]bool{}
		for _, p := range r.FieldPaths() {
			named[p] = true
		}
		for _, f := range []string{"sms", "sendRate", "twilio.accountSid", "twilio.authToken", "twilio.from",
			"quietHours.timezone", "quietHours.start", "templates[0].language", "templates[0].smsText"} {
			if !named[f] {
				t.Errorf("the error does not name %s: %s", f, r.Body)
			}
		}
		// A WhatsApp provider that is not set up is refused too.
		wantError(t, a.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{"whatsapp": "cloud"}),
			http.StatusBadRequest, "VALIDATION_ERROR")

		a.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{
			"twilio":    map[string]any{"accountSid": naSIDA, "authToken": naTokenA, "from": "+15005550101"},
			"templates": []any{map[string]any{"moment": "joined", "language": "en", "smsText": "A says: number {code}"}},
		}).Must(http.StatusOK, nil)
		b.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{
			"twilio": map[string]any{"accountSid": naSIDB, "authToken": naTokenB, "messagingServiceSid": naMGB},
		}).Must(http.StatusOK, nil)

		// A read shows which secrets are set, never one.
		got := a.app.API(http.MethodGet, notifyhttp.SettingsPath, nil)
		var view struct {
			Own    bool `json:"own"`
			Twilio struct {
				AccountSID   string `json:"accountSid"`
				AuthTokenSet bool   `json:"authTokenSet"`
			} `json:"twilio"`
			Callbacks struct {
				TwilioStatus string `json:"twilioStatus"`
			} `json:"callbacks"`
		}
		got.Must(http.StatusOK, &view)
		if strings.Contains(string(got.Body), naTokenA) || !view.Own || !view.Twilio.AuthTokenSet || view.Twilio.AccountSID != naSIDA ||
			!strings.HasSuffix(view.Callbacks.TwilioStatus, notifyhttp.TwilioStatusPath+"/"+a.app.AccountID) {
			t.Fatalf("GET: %s", got.Body)
		}
		if strings.Contains(string(b.app.API(http.MethodGet, notifyhttp.SettingsPath, nil).Body), naTokenB) {
			t.Fatal("GET shows B's token")
		}
		if cfg := a.app.Config; cfg.Storage == config.StoragePostgres {
			db, err := postgres.Open(context.Background(), cfg.Database.URL)
			if err != nil {
				t.Fatal(err)
			}
			var settings, secrets string
			if err := db.Pool.QueryRow(context.Background(), `SELECT settings::text, secrets FROM notification_accounts WHERE account_id = $1`,
				a.app.AccountID).Scan(&settings, &secrets); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if strings.Contains(settings+secrets, naTokenA) || strings.Contains(settings+secrets, "token-of") ||
				!strings.HasPrefix(secrets, "v1:") || !strings.Contains(settings, naSIDA) {
				t.Fatalf("stored: settings %s, secrets %s", settings, secrets)
			}
		}

		qa, qb := a.queue(nil), b.queue(nil)
		ta := a.take(qa.Runs[0].ID, map[string]any{"phone": "+34600100001"})
		tb := b.take(qb.Runs[0].ID, map[string]any{"phone": "+34600200002"})
		ma := ntFind(t, ntWait(t, a.app, ta.ID, "A's joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") }), "joined")
		ntWait(t, b.app, tb.ID, "B's joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })
		by := map[string]fakeprovider.Received{}
		for _, m := range fake.Messages() {
			by[m.To] = m
		}
		if m := by["+34600100001"]; m.Account != naSIDA || m.From != "+15005550101" || m.Body != "A says: number "+ta.DisplayCode {
			t.Fatalf("A's message: %+v", m)
		}
		if m := by["+34600200002"]; m.Account != naSIDB || m.Sender != naMGB || !strings.Contains(m.Body, "you are number") {
			t.Fatalf("B's message: %+v", m)
		}

		// Written back without its token (as a read shows it): the token
		// of the same Twilio account stays, and the next message goes.
		a.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{
			"twilio": map[string]any{"accountSid": naSIDA, "from": "+15005550102"},
		}).Must(http.StatusOK, nil)
		ta2 := a.take(qa.Runs[0].ID, map[string]any{"phone": "+34600100003"})
		ntWait(t, a.app, ta2.ID, "sent with the kept token", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })
		// A new Twilio account without its token is refused.
		wantError(t, a.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{
			"twilio": map[string]any{"accountSid": naSIDB, "from": "+15005550102"}}), http.StatusBadRequest, "VALIDATION_ERROR")

		// Callbacks on A's path: B's token is refused; B's own path
		// cannot touch A's message; A's token applies.
		hookA := a.app.BaseURL + notifyhttp.TwilioStatusPath + "/" + a.app.AccountID
		hookB := a.app.BaseURL + notifyhttp.TwilioStatusPath + "/" + b.app.AccountID
		if s, err := fake.StatusAs(hookA, naSIDA, naTokenB, *ma.ProviderMessageID, "delivered"); err != nil || s != http.StatusForbidden {
			t.Fatalf("A's callback signed by B: %d %v", s, err)
		}
		if s, err := fake.StatusAs(hookA, naSIDA, ntToken, *ma.ProviderMessageID, "delivered"); err != nil || s != http.StatusForbidden {
			t.Fatalf("A's callback signed by the operator: %d %v", s, err)
		}
		if s, err := fake.StatusAs(hookB, naSIDB, naTokenB, *ma.ProviderMessageID, "delivered"); err != nil || s != http.StatusNoContent {
			t.Fatalf("B's callback about A's message: %d %v", s, err)
		}
		if m := ntFind(t, ntMessages(t, a.app, ta.ID), "joined"); m.Status != "SENT" {
			t.Fatalf("B's callback changed A's message: %+v", m)
		}
		if s, err := fake.StatusAs(hookA, naSIDA, naTokenA, *ma.ProviderMessageID, "delivered"); err != nil || s != http.StatusNoContent {
			t.Fatalf("A's callback: %d %v", s, err)
		}
		if m := ntFind(t, ntMessages(t, a.app, ta.ID), "joined"); m.Status != "DELIVERED" {
			t.Fatalf("A's callback did not apply: %+v", m)
		}
		// An account without settings has no callbacks of its own.
		c := naAccount(t, a)
		hookC := a.app.BaseURL + notifyhttp.TwilioStatusPath + "/" + c.app.AccountID
		if s, _ := fake.StatusAs(hookC, ntSID, ntToken, *ma.ProviderMessageID, "read"); s != http.StatusForbidden {
			t.Fatalf("a callback on the path of an account without settings: %d", s)
		}
		// A reply to B's sender acts on B's messages only: STOP there
		// suppresses B's next message to the number, not A's.
		inboundB := a.app.BaseURL + notifyhttp.TwilioInboundPath + "/" + b.app.AccountID
		if s, err := fake.ReplyAs(inboundB, naSIDB, naTokenB, "+34600200002", "STOP"); err != nil || s != http.StatusOK {
			t.Fatalf("STOP to B: %d %v", s, err)
		}
		tb2 := b.take(qb.Runs[0].ID, map[string]any{"phone": "+34600200002"})
		ntWait(t, b.app, tb2.ID, "suppressed at B", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SUPPRESSED") })
		ta3 := a.take(qa.Runs[0].ID, map[string]any{"phone": "+34600200002"})
		ntWait(t, a.app, ta3.ID, "still sent at A", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })

		// Deleting the settings gives the account back to the operator.
		b.app.API(http.MethodDelete, notifyhttp.SettingsPath, nil).Must(http.StatusNoContent, nil)
		if r := b.app.API(http.MethodGet, notifyhttp.SettingsPath, nil); !strings.Contains(string(r.Body), `"own":false`) {
			t.Fatalf("after DELETE: %s", r.Body)
		}
		tb3 := b.take(qb.Runs[0].ID, map[string]any{"phone": "+34600200009"})
		ntWait(t, b.app, tb3.ID, "sent by the operator", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })
		for _, m := range fake.Messages() {
			if m.To == "+34600200009" && m.Account != ntSID {
				t.Fatalf("after DELETE B's message went through %s", m.Account)
			}
		}
		// A key without the webhooks scopes cannot read the settings.
		key := a.app.NewKey(a.app.AccountID, "queues:read")
		if r := a.app.APIWith(key, http.MethodGet, notifyhttp.SettingsPath, nil); r.Status != http.StatusForbidden {
			t.Fatalf("without webhooks:read: %d", r.Status)
		}
	})
}

// TestNotifyCustomerLanguage: a customer who joined on the join page in
// Spanish hears in Spanish though the queue speaks English; a turn taken
// through the API with a language gets that language; one without, the
// queue's.
func TestNotifyCustomerLanguage(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		w := turnStart(t, start, ntTwilio(fake.URL()))
		q := w.queue(map[string]any{"whatsappCapture": true})
		var link struct {
			Token string `json:"token"`
		}
		w.app.API(http.MethodPost, "/queues/"+q.ID+"/join-links", map[string]any{}).Must(http.StatusCreated, &link)
		var joined struct {
			TurnID string `json:"turnId"`
		}
		w.app.Do(http.MethodPost, "/join/"+link.Token, map[string]any{"phone": "+34600300003", "language": "es"}, nil).
			Must(http.StatusCreated, &joined)
		es := ntFind(t, ntWait(t, w.app, joined.TurnID, "joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") }), "joined")
		if !strings.Contains(es.Body, "su turno") {
			t.Fatalf("joined in Spanish, told: %q", es.Body)
		}
		pt := w.take(q.Runs[0].ID, map[string]any{"phone": "+34600300004", "language": "pt"})
		if m := ntFind(t, ntWait(t, w.app, pt.ID, "joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") }), "joined"); !strings.Contains(m.Body, "a sua senha") {
			t.Fatalf("taken in Portuguese, told: %q", m.Body)
		}
		en := w.take(q.Runs[0].ID, map[string]any{"phone": "+34600300005"})
		if m := ntFind(t, ntWait(t, w.app, en.ID, "joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") }), "joined"); !strings.Contains(m.Body, "you are number") {
			t.Fatalf("no language, told: %q", m.Body)
		}
		// The call follows in the customer's language too.
		w.app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/dispatch/next", nil).Must(http.StatusCreated, nil)
		if m := ntFind(t, ntWait(t, w.app, joined.TurnID, "called", func(ms []ntMessage) bool { return ntHas(ms, "called", "SENT") }), "called"); !strings.Contains(m.Body, "es su turno") {
			t.Fatalf("called in Spanish, told: %q", m.Body)
		}
		// A language outside the four is refused, naming the field.
		r := w.app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/turns", map[string]any{"phone": "+34600300006", "language": "de"})
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if p := r.FieldPaths(); len(p) != 1 || p[0] != "language" {
			t.Fatalf("fields named: %v (%s)", p, r.Body)
		}
		r = w.app.Do(http.MethodPost, "/join/"+link.Token, map[string]any{"phone": "+34600300007", "language": "xx"}, nil)
		if p := r.FieldPaths(); r.Status != http.StatusBadRequest || len(p) != 1 || p[0] != "language" {
			t.Fatalf("join with language xx: %d %s", r.Status, r.Body)
		}
	})
}

// TestNotifySendRate: an account's send rate holds across the account's
// messages: those over it wait (QUEUED, saying why) and go when the
// window lets them, none dropped.
func TestNotifySendRate(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		fake.AddAccount(naSIDA, naTokenA)
		w := turnStart(t, start, ntTwilio(fake.URL()))
		w.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{"sendRate": 2,
			"twilio": map[string]any{"accountSid": naSIDA, "authToken": naTokenA, "from": "+15005550101"}}).Must(http.StatusOK, nil)
		q := w.queue(nil)
		var ids []string
		for _, p := range []string{"+34600400001", "+34600400002", "+34600400003", "+34600400004"} {
			ids = append(ids, w.take(q.Runs[0].ID, map[string]any{"phone": p}).ID)
		}
		start0 := time.Now()
		// Two go; the other two are held back, saying why, not dropped.
		type msg struct {
			Status string  `json:"status"`
			Error  *string `json:"error"`
		}
		var sent, held int
		for end := time.Now().Add(20 * time.Second); ; {
			sent, held = 0, 0
			for _, id := range ids {
				var out struct {
					Data []msg `json:"data"`
				}
				w.app.API(http.MethodGet, "/turns/"+id+"/notifications", nil).Must(http.StatusOK, &out)
				for _, m := range out.Data {
					switch {
					case m.Status == "SENT":
						sent++
					case m.Status == "QUEUED" && m.Error != nil && strings.Contains(*m.Error, "send rate"):
						held++
					}
				}
			}
			if sent+held == len(ids) || time.Now().After(end) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := len(fake.Messages()); n != 2 || sent != 2 || held != 2 {
			t.Fatalf("within the first minute: %d at the provider, %d sent, %d held saying why; want 2, 2, 2", n, sent, held)
		}
		// The window frees after a minute: the held two go then.
		got := fake.Wait(4, 90*time.Second)
		if len(got) != 4 {
			t.Fatalf("after the window: %d of 4 sent", len(got))
		}
		if d := got[3].At.Sub(start0); d < 55*time.Second {
			t.Fatalf("the rate did not hold: the 4th went after %v", d)
		}
		for _, id := range ids {
			ntWait(t, w.app, id, "sent", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })
		}
	})
}

// TestNotifyAccountWhatsAppCloud: an account's own WhatsApp Cloud API
// number sends its template messages in its own template and language;
// the verification handshake and the webhooks on the account's path check
// its verify token and app secret; another app's signature is refused.
func TestNotifyAccountWhatsAppCloud(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		fake := fakeprovider.NewWhatsApp("v21.0", "5550001", "account-cloud-token", "account-app-secret")
		defer fake.Close()
		// The operator logs WhatsApp; the account has its own number.
		w := turnStart(t, start, apptest.WithConfig(func(c *config.Config) {
			c.Notify.WhatsApp, c.Notify.CloudURL, c.Notify.CloudVersion = "log", fake.URL(), "v21.0"
		}))
		w.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{
			"whatsappCloud": map[string]any{"phoneNumberId": "5550001", "token": "account-cloud-token",
				"appSecret": "account-app-secret", "verifyToken": "account-verify"},
			"templates": []any{map[string]any{"moment": "joined", "language": "en", "whatsappTemplate": "acme_welcome", "whatsappLanguage": "en_US"}},
		}).Must(http.StatusOK, nil)
		if r := w.app.API(http.MethodGet, notifyhttp.SettingsPath, nil); strings.Contains(string(r.Body), "account-cloud-token") ||
			strings.Contains(string(r.Body), "account-app-secret") || strings.Contains(string(r.Body), "account-verify") ||
			!strings.Contains(string(r.Body), `"appSecretSet":true`) {
			t.Fatalf("GET: %s", r.Body)
		}
		hook := w.app.BaseURL + notifyhttp.WhatsAppPath + "/" + w.app.AccountID
		if s, body, err := fake.Verify(hook, "account-verify", "4242"); err != nil || s != http.StatusOK || body != "4242" {
			t.Fatalf("the account's handshake: %d %q %v", s, body, err)
		}
		if s, _, _ := fake.Verify(w.app.BaseURL+notifyhttp.WhatsAppPath, "account-verify", "1"); s != http.StatusForbidden {
			t.Fatalf("the account's verify token on the operator's path: %d", s)
		}
		q := w.queue(nil)
		tn := w.take(q.Runs[0].ID, map[string]any{"phone": "+34600500001", "notifyWhatsapp": true})
		m := ntFind(t, ntWait(t, w.app, tn.ID, "joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") }), "joined")
		got := fake.Messages()
		if len(got) != 1 || got[0].Template != "acme_welcome" || got[0].Language != "en_US" || m.Provider != "whatsapp" {
			t.Fatalf("the account's template message: %+v / %+v", got, m)
		}
		// Signed by another app: refused; by the account's: applied.
		fake.AppSecret = "another-app-secret"
		if s, _ := fake.Status(hook, *m.ProviderMessageID, "read", 0); s != http.StatusForbidden {
			t.Fatalf("another app's signature: %d", s)
		}
		fake.AppSecret = "account-app-secret"
		if s, _ := fake.Status(hook, *m.ProviderMessageID, "read", 0); s != http.StatusOK {
			t.Fatalf("the account's signature: %d", s)
		}
		if m := ntFind(t, ntMessages(t, w.app, tn.ID), "joined"); m.Status != "READ" {
			t.Fatalf("after the account's status: %+v", m)
		}
	})
}

// TestNotifySendRateAcrossProcesses: two processes on one database send
// one account's messages; the account's rate (2 a minute) holds for the
// two together: two reach the provider, the rest wait saying why.
func TestNotifySendRateAcrossProcesses(t *testing.T) {
	url := pgtest.URL(t)
	fake := fakeprovider.NewTwilio(ntSID, ntToken)
	defer fake.Close()
	fake.AddAccount(naSIDA, naTokenA)
	a := apptest.PostgresAt(t, url, ntTwilio(fake.URL()))
	b := apptest.PostgresAt(t, url, ntTwilio(fake.URL()))
	b.AccountID, b.Key = a.AccountID, a.Key
	a.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{"sendRate": 2,
		"twilio": map[string]any{"accountSid": naSIDA, "authToken": naTokenA, "from": "+15005550101"}}).Must(http.StatusOK, nil)
	w := &turnWorld{t: t, app: a}
	var e struct {
		ID string `json:"id"`
	}
	a.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
	w.entity = e.ID
	q := w.queue(nil)
	var ids []string
	for i := range 6 {
		app := a
		if i%2 == 1 {
			app = b
		}
		var tn struct {
			ID string `json:"id"`
		}
		app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/turns", map[string]any{"phone": fmt.Sprintf("+3460060000%d", i)}).
			Must(http.StatusCreated, &tn)
		ids = append(ids, tn.ID)
	}
	var sent, held int
	for end := time.Now().Add(20 * time.Second); ; {
		sent, held = 0, 0
		for _, id := range ids {
			var out struct {
				Data []struct {
					Status string  `json:"status"`
					Error  *string `json:"error"`
				} `json:"data"`
			}
			a.API(http.MethodGet, "/turns/"+id+"/notifications", nil).Must(http.StatusOK, &out)
			for _, m := range out.Data {
				switch {
				case m.Status == "SENT":
					sent++
				case m.Status == "QUEUED" && m.Error != nil && strings.Contains(*m.Error, "send rate"):
					held++
				}
			}
		}
		if sent+held == len(ids) || time.Now().After(end) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(fake.Messages()); n != 2 || sent != 2 || held != 4 {
		t.Fatalf("two processes, 2 a minute: %d at the provider, %d sent, %d held; want 2, 2, 4", n, sent, held)
	}
}

// BenchmarkNotifyAccountSustained is BenchmarkNotifySustained for an
// account with its own settings: its own Twilio account, a template and a
// send rate high enough not to bind (6000 a minute), so each message also
// reads the account's settings (opening its sealed secrets) and spends
// one of the shared rate window.
//
//	go test -run '^$' -bench NotifyAccountSustained -benchtime 1x ./test/e2e/
func BenchmarkNotifyAccountSustained(b *testing.B) {
	for _, mode := range []struct {
		name  string
		start func(t testing.TB, opts ...apptest.Option) *apptest.App
	}{{"memory", apptest.Memory}, {"postgres", apptest.Postgres}} {
		b.Run(mode.name, func(b *testing.B) {
			const turns, clients = 400, 8
			fake := fakeprovider.NewTwilio(ntSID, ntToken)
			defer fake.Close()
			fake.AddAccount(naSIDA, naTokenA)
			a := mode.start(b, ntTwilio(fake.URL()))
			a.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{"sendRate": 6000,
				"twilio":    map[string]any{"accountSid": naSIDA, "authToken": naTokenA, "from": "+15005550101"},
				"templates": []any{map[string]any{"moment": "joined", "language": "en", "smsText": "{queue}: {code} {link}"}},
			}).Must(http.StatusOK, nil)
			var e struct {
				ID string `json:"id"`
			}
			a.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
			var q struct {
				Runs []struct {
					ID string `json:"id"`
				} `json:"runs"`
			}
			a.API(http.MethodPost, "/queues", map[string]any{"entityId": e.ID, "name": "Counter", "type": "TURN"}).Must(http.StatusCreated, &q)
			run := q.Runs[0].ID
			var mu sync.Mutex
			committed := map[string]time.Time{}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := c; i < turns; i += clients {
						phone := fmt.Sprintf("+346002%05d", i)
						at := time.Now()
						r := a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{"phone": phone, "language": "en"})
						if r.Status != http.StatusCreated {
							b.Errorf("take: %d %s", r.Status, r.Body)
							return
						}
						mu.Lock()
						committed[phone] = at
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			got := fake.Wait(turns, 60*time.Second)
			b.StopTimer()
			if len(got) != turns {
				b.Fatalf("the provider got %d of %d", len(got), turns)
			}
			var lat []time.Duration
			last := start
			for _, m := range got {
				if m.Account != naSIDA {
					b.Fatalf("a message went through %s", m.Account)
				}
				lat = append(lat, m.At.Sub(committed[m.To]))
				if m.At.After(last) {
					last = m.At
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(turns)/last.Sub(start).Seconds(), "msgs/s")
			b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
		})
	}
}

// TestNotifyLanguageFromTheJoinPageInChromium: a customer opens the join
// page in Spanish (?lang=es) on a phone-sized Chromium, leaves a number
// and takes a turn; the queue's messages are English, yet the joined SMS
// reaching the fake Twilio is Spanish: the page sent the language it
// showed.
func TestNotifyLanguageFromTheJoinPageInChromium(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		ctx := browser(t)
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		app := start(t, ntTwilio(fake.URL()), apptest.WithConfig(func(c *config.Config) { c.Join.PerAddressPerMinute = 100000 }))
		q := joinQueue(t, app, "Farmacia", map[string]any{"whatsappCapture": true})
		l := newJoinLink(t, app, q.ID, map[string]any{"phoneRegion": "ES"})
		nav, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := chromedp.Run(nav, phoneSize, chromedp.Navigate(l.URL+"?lang=es")); err != nil {
			t.Fatal(err)
		}
		if err := within(nav, 10*time.Second, `window.qmsJoin && window.qmsJoin.state === "ready" && document.documentElement.lang === "es"`); err != nil {
			fail(t, nav, "notify-lang-failed.png", "the join page in Spanish", err)
		}
		if err := chromedp.Run(nav,
			chromedp.Click(`#q0-0`, chromedp.ByQuery),
			chromedp.SendKeys(`#q1`, "Ana", chromedp.ByQuery),
			chromedp.SendKeys(`#phone`, "600 12 34 56", chromedp.ByQuery),
			chromedp.Click("#take", chromedp.ByQuery),
		); err != nil {
			t.Fatal(err)
		}
		if err := within(nav, 10*time.Second, `location.pathname.startsWith("/ticket/")`); err != nil {
			fail(t, nav, "notify-lang-failed.png", "landing on the ticket page", err)
		}
		got := fake.Wait(1, 20*time.Second)
		if len(got) != 1 || got[0].To != "+34600123456" || !strings.Contains(got[0].Body, "su turno") {
			t.Fatalf("the joined SMS of a customer who read the page in Spanish: %+v", got)
		}
	})
}

// TestNotifyForwardKeepsTheCustomersLanguage: a customer who took a turn
// in Spanish on an English queue and is forwarded along a manual link
// hears the destination's "forwarded" message in Spanish too: the
// language goes on with the customer, not with the queue.
func TestNotifyForwardKeepsTheCustomersLanguage(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		w := turnStart(t, start, ntTwilio(fake.URL()))
		from := w.queue(map[string]any{"whatsappCapture": true})
		to := w.queue(map[string]any{"whatsappCapture": true})
		var link struct{ ID string }
		w.app.API(http.MethodPost, "/queue-links", map[string]any{"fromQueueDefinitionId": from.ID, "toQueueDefinitionId": to.ID,
			"trigger": "manual"}).Must(http.StatusCreated, &link)
		src := w.take(from.Runs[0].ID, map[string]any{"phone": "+34600300008", "language": "es"})
		ntWait(t, w.app, src.ID, "joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })
		var fw client.QueueForward
		w.app.API(http.MethodPost, "/turns/"+src.ID+"/forward", map[string]any{"linkId": link.ID}).Must(http.StatusCreated, &fw)
		if fw.ToTurnID == nil {
			t.Fatalf("the forward made no turn: %+v", fw)
		}
		m := ntFind(t, ntWait(t, w.app, *fw.ToTurnID, "forwarded", func(ms []ntMessage) bool { return ntHas(ms, "forwarded", "SENT") }), "forwarded")
		if !strings.Contains(m.Body, "le hemos pasado a esta cola") {
			t.Fatalf("forwarded in Spanish, told: %q", m.Body)
		}
	})
}
