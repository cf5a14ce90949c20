package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/http/notifyhttp"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/fakeprovider"
	"github.com/qms-dev/qms/test/pgtest"
)

const (
	ntSID   = "AC00000000000000000000000000000001"
	ntToken = "twilio-auth-token-test"
)

type ntMessage struct {
	ID                string  `json:"id"`
	TurnID            string  `json:"turnId"`
	Moment            string  `json:"moment"`
	Occurrence        int     `json:"occurrence"`
	Channel           string  `json:"channel"`
	To                string  `json:"to"`
	Body              string  `json:"body"`
	Provider          string  `json:"provider"`
	ProviderMessageID *string `json:"providerMessageId"`
	Status            string  `json:"status"`
	ErrorCode         *string `json:"errorCode"`
	Error             *string `json:"error"`
	Attempts          int     `json:"attempts"`
}

// ntTwilio configures a process to send SMS and WhatsApp through the fake
// Twilio at url.
func ntTwilio(url string) apptest.Option {
	return apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 1000000
		c.Notify.SMS, c.Notify.WhatsApp = "twilio", "twilio"
		c.Notify.TwilioURL, c.Notify.TwilioAccountSID, c.Notify.TwilioAuthToken = url, ntSID, ntToken
		c.Notify.TwilioFrom, c.Notify.TwilioWhatsAppFrom = "+15005550006", "+14155238886"
	})
}

func ntMessages(t *testing.T, a *apptest.App, turnID string) []ntMessage {
	t.Helper()
	var out struct {
		Data []ntMessage `json:"data"`
	}
	a.API(http.MethodGet, "/turns/"+turnID+"/notifications", nil).Must(http.StatusOK, &out)
	return out.Data
}

// ntWait polls a turn's messages until ok holds.
func ntWait(t *testing.T, a *apptest.App, turnID string, what string, ok func([]ntMessage) bool) []ntMessage {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for {
		ms := ntMessages(t, a, turnID)
		if ok(ms) {
			return ms
		}
		if time.Now().After(end) {
			t.Fatalf("turn %s: %s never held: %+v", turnID, what, ms)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ntHas reports whether ms holds a message of moment in status.
func ntHas(ms []ntMessage, moment, status string) bool {
	for _, m := range ms {
		if m.Moment == moment && m.Status == status {
			return true
		}
	}
	return false
}

func ntFind(t *testing.T, ms []ntMessage, moment string) ntMessage {
	t.Helper()
	for _, m := range ms {
		if m.Moment == moment {
			return m
		}
	}
	t.Fatalf("no %s in %+v", moment, ms)
	return ntMessage{}
}

// TestNotifyMomentsThroughTwilio takes turns through their moments on a
// process that sends through a fake Twilio: each moment's message reaches
// the provider once, with its text; a status callback applies once and
// never goes back; a number the provider refuses ends FAILED; 429s are
// retried; STOP suppresses the next turn's messages and START lifts it;
// LEAVE cancels a turn, HERE marks it arrived.
func TestNotifyMomentsThroughTwilio(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		w := turnStart(t, start, ntTwilio(fake.URL()))
		q := w.queue(map[string]any{"turnPrefix": "A", "stations": []any{map[string]any{"label": "Desk 1"}}})
		run := q.Runs[0].ID
		w.app.API(http.MethodPut, "/queues/"+q.ID+"/notifications", map[string]any{"nearFrontAhead": 1}).Must(http.StatusOK, nil)

		a := w.take(run, map[string]any{"phone": "+34600111222"})
		b := w.take(run, map[string]any{"phone": "+34600333444", "notifyWhatsapp": true})
		c := w.take(run, nil)
		d := w.take(run, map[string]any{"phone": fakeprovider.InvalidNumber})

		ms := ntWait(t, w.app, a.ID, "joined sent", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })
		j := ntFind(t, ms, "joined")
		if j.Channel != "SMS" || j.To != "+34*******22" || !strings.Contains(j.Body, "A1") || !strings.Contains(j.Body, w.app.BaseURL+"/ticket/") ||
			j.Provider != "twilio" || j.ProviderMessageID == nil {
			t.Fatalf("joined: %+v", j)
		}
		ntWait(t, w.app, b.ID, "whatsapp joined", func(ms []ntMessage) bool {
			return ntHas(ms, "joined", "SENT") && ms[0].Channel == "WHATSAPP"
		})
		if ms := ntMessages(t, w.app, c.ID); len(ms) != 0 {
			t.Fatalf("a turn without a phone got %+v", ms)
		}
		fd := ntFind(t, ntWait(t, w.app, d.ID, "invalid number fails", func(ms []ntMessage) bool { return ntHas(ms, "joined", "FAILED") }), "joined")
		if fd.ErrorCode == nil || *fd.ErrorCode != "INVALID_NUMBER" {
			t.Fatalf("invalid number: %+v", fd)
		}

		// called, at the station; b is now first in line: near the front.
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", map[string]any{"stationId": q.Stations[0].ID}).Must(http.StatusCreated, nil)
		called := ntFind(t, ntWait(t, w.app, a.ID, "called", func(ms []ntMessage) bool { return ntHas(ms, "called", "SENT") }), "called")
		if !strings.Contains(called.Body, "Desk 1") {
			t.Fatalf("called: %q", called.Body)
		}
		// The 429s come before the next message: it is retried until sent.
		fake.FailNextFor("+34600111222", http.StatusTooManyRequests, 2)
		w.op(a.ID, "call", nil).Must(http.StatusCreated, nil)
		again := ntFind(t, ntWait(t, w.app, a.ID, "called again", func(ms []ntMessage) bool { return ntHas(ms, "called_again", "SENT") }), "called_again")
		if again.Occurrence != 2 || again.Attempts != 3 {
			t.Fatalf("called again after two 429s: %+v", again)
		}
		w.op(a.ID, "no-show", nil).Must(http.StatusCreated, nil)
		ntWait(t, w.app, a.ID, "no-show", func(ms []ntMessage) bool { return ntHas(ms, "no_show", "SENT") })
		ntWait(t, w.app, b.ID, "near front", func(ms []ntMessage) bool { return ntHas(ms, "near_front", "SENT") })
		w.op(b.ID, "cancel", nil).Must(http.StatusCreated, nil)
		ntWait(t, w.app, b.ID, "cancelled", func(ms []ntMessage) bool { return ntHas(ms, "cancelled", "SENT") })

		// Status callbacks: delivered applies once; a repeat and a late
		// "sent" change nothing.
		hook := w.app.BaseURL + notifyhttp.TwilioStatusPath
		sid := *j.ProviderMessageID
		for _, st := range []string{"delivered", "delivered", "sent"} {
			if s, err := fake.Status(hook, sid, st, ""); err != nil || s != http.StatusNoContent {
				t.Fatalf("status %s: %d %v", st, s, err)
			}
		}
		if got := ntFind(t, ntMessages(t, w.app, a.ID), "joined"); got.Status != "DELIVERED" {
			t.Fatalf("after callbacks: %+v", got)
		}
		// A forged callback is refused.
		r := w.app.Do(http.MethodPost, notifyhttp.TwilioStatusPath, nil, map[string]string{"X-Twilio-Signature": "forged"})
		if r.Status != http.StatusForbidden {
			t.Fatalf("forged callback: %d", r.Status)
		}

		// Every moment reached the provider once.
		count := map[string]int{}
		for _, m := range fake.Messages() {
			count[m.To]++
		}
		if count["+34600111222"] != 4 || count["+34600333444"] != 3 {
			t.Fatalf("messages per number: %v", count)
		}

		// STOP, then a new turn: nothing is sent; START lifts it.
		inbound := w.app.BaseURL + notifyhttp.TwilioInboundPath
		if s, err := fake.Reply(inbound, "+34600111222", "stop"); err != nil || s != http.StatusOK {
			t.Fatalf("STOP: %d %v", s, err)
		}
		before := len(fake.Messages())
		e := w.take(run, map[string]any{"phone": "+34600111222"})
		ntWait(t, w.app, e.ID, "suppressed", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SUPPRESSED") })
		if n := len(fake.Messages()); n != before {
			t.Fatalf("a suppressed number got a message: %d → %d", before, n)
		}
		if s, err := fake.Reply(inbound, "+34600111222", "START"); err != nil || s != http.StatusOK {
			t.Fatalf("START: %d %v", s, err)
		}
		// HERE marks the turn arrived; LEAVE cancels it.
		if s, err := fake.Reply(inbound, "+34600111222", "here"); err != nil || s != http.StatusOK {
			t.Fatalf("HERE: %d %v", s, err)
		}
		if got := w.get(e.ID); got.ArrivedAt == nil {
			t.Fatalf("HERE did not mark the turn arrived: %+v", got)
		}
		if s, err := fake.Reply(inbound, "+34600111222", "LEAVE please"); err != nil || s != http.StatusOK {
			t.Fatalf("LEAVE: %d %v", s, err)
		}
		if got := w.get(e.ID); got.Status != "CANCELLED" {
			t.Fatalf("LEAVE: %s", got.Status)
		}
		if ms := ntMessages(t, w.app, e.ID); ntHas(ms, "cancelled", "SENT") || ntHas(ms, "cancelled", "QUEUED") {
			t.Fatalf("a customer who left is told they were cancelled: %+v", ms)
		}
		if testing.Verbose() {
			fmt.Println(fake.Conversation())
		}
	})
}

// TestNotifyWhatsAppCloud sends through a fake WhatsApp Cloud API: template
// messages in the customer's language, the verification handshake, signed
// status webhooks, a refused number falling back to SMS.
func TestNotifyWhatsAppCloud(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		fake := fakeprovider.NewWhatsApp("v21.0", "1234567890", "cloud-token", "app-secret")
		defer fake.Close()
		w := turnStart(t, start, apptest.WithConfig(func(c *config.Config) {
			c.Notify.WhatsApp = "cloud"
			c.Notify.CloudURL, c.Notify.CloudVersion, c.Notify.CloudPhoneNumberID = fake.URL(), "v21.0", "1234567890"
			c.Notify.CloudToken, c.Notify.CloudAppSecret, c.Notify.CloudVerifyToken = "cloud-token", "app-secret", "verify-me"
		}))
		q := w.queue(map[string]any{"turnPrefix": "W"})
		run := q.Runs[0].ID
		w.app.API(http.MethodPut, "/queues/"+q.ID+"/notifications",
			map[string]any{"language": "es", "whatsappFallbackSms": true}).Must(http.StatusOK, nil)
		hook := w.app.BaseURL + notifyhttp.WhatsAppPath
		if s, body, err := fake.Verify(hook, "verify-me", "1158201444"); err != nil || s != http.StatusOK || body != "1158201444" {
			t.Fatalf("verification: %d %q %v", s, body, err)
		}
		if s, _, _ := fake.Verify(hook, "wrong", "1"); s != http.StatusForbidden {
			t.Fatalf("a wrong verify token: %d", s)
		}
		a := w.take(run, map[string]any{"phone": "+34600555666", "notifyWhatsapp": true})
		j := ntFind(t, ntWait(t, w.app, a.ID, "joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") }), "joined")
		got := fake.Messages()[0]
		if got.Template != "qms_joined" || got.Language != "es" || len(got.Params) != 3 || got.Params[1] != "W1" || !strings.Contains(j.Body, "su turno") {
			t.Fatalf("template message: %+v / %+v", got, j)
		}
		for _, st := range []string{"delivered", "read", "delivered"} {
			if s, err := fake.Status(hook, *j.ProviderMessageID, st, 0); err != nil || s != http.StatusOK {
				t.Fatalf("status %s: %d %v", st, s, err)
			}
		}
		if m := ntFind(t, ntMessages(t, w.app, a.ID), "joined"); m.Status != "READ" {
			t.Fatalf("after statuses: %+v", m)
		}
		// Not a WhatsApp user: FAILED, and the SMS stands in (the log outbox here).
		b := w.take(run, map[string]any{"phone": fakeprovider.NotMobile, "notifyWhatsapp": true})
		ms := ntWait(t, w.app, b.ID, "fallback", func(ms []ntMessage) bool {
			return len(ms) == 2 && ms[0].Status == "FAILED" && ms[1].Channel == "SMS" && ms[1].Status == "SENT"
		})
		if ms[0].ErrorCode == nil || *ms[0].ErrorCode != "INVALID_NUMBER" {
			t.Fatalf("refused: %+v", ms[0])
		}
		// A reply: STOP suppresses the number.
		if s, err := fake.Reply(hook, "+34600555666", "STOP"); err != nil || s != http.StatusOK {
			t.Fatalf("reply: %d %v", s, err)
		}
		c := w.take(run, map[string]any{"phone": "+34600555666", "notifyWhatsapp": true})
		ntWait(t, w.app, c.ID, "suppressed", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SUPPRESSED") })
		r := w.app.Do(http.MethodPost, notifyhttp.WhatsAppPath, map[string]any{"object": "x"}, map[string]string{"X-Hub-Signature-256": "sha256=00"})
		if r.Status != http.StatusForbidden {
			t.Fatalf("forged webhook: %d", r.Status)
		}
		if testing.Verbose() {
			fmt.Println(fake.Conversation())
		}
	})
}

// TestNotifyCrashBetweenCommitAndSend stops the process after the change
// committed and before its message could be sent (the provider was out of
// reach), and starts another on the same database: the message is sent,
// once.
func TestNotifyCrashBetweenCommitAndSend(t *testing.T) {
	url := pgtest.URL(t)
	fake := fakeprovider.NewTwilio(ntSID, ntToken)
	defer fake.Close()
	dead := fakeprovider.NewTwilio(ntSID, ntToken)
	deadURL := dead.URL()
	dead.Close() // connection refused: the attempt fails, to be retried
	a := apptest.PostgresAt(t, url, ntTwilio(deadURL))
	w := &turnWorld{t: t, app: a}
	var e struct {
		ID string `json:"id"`
	}
	a.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
	w.entity = e.ID
	q := w.queue(nil)
	tn := w.take(q.Runs[0].ID, map[string]any{"phone": "+34600777888"})
	ntWait(t, a, tn.ID, "an attempt failed", func(ms []ntMessage) bool { return len(ms) == 1 && ms[0].Attempts >= 1 })
	a.Stop()

	b := apptest.PostgresAt(t, url, ntTwilio(fake.URL()))
	b.AccountID, b.Key = a.AccountID, a.Key
	ntWait(t, b, tn.ID, "sent after the restart", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })
	time.Sleep(300 * time.Millisecond)
	if n := len(fake.Messages()); n != 1 {
		t.Fatalf("the provider got %d messages, want 1", n)
	}
}

// TestNotifyGivesUpAndTellsWebhooks lets the provider answer 503 to every
// try of a message: it is given up after notify.attempts (FAILED,
// RETRIES_EXHAUSTED, counted as gave_up), and each status change reaches
// a webhook endpoint subscribed to notification.status.
func TestNotifyGivesUpAndTellsWebhooks(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		rc := newWhReceiver(t, func(int, *http.Request, <-chan struct{}) int { return http.StatusOK })
		w := turnStart(t, start, ntTwilio(fake.URL()), apptest.WithConfig(func(c *config.Config) { c.Notify.Attempts = 2 }))
		whEndpoint(t, w.app, rc.URL(), "notification.status")
		q := w.queue(nil)
		fake.FailNextFor("+34600444555", http.StatusServiceUnavailable, 2)
		a := w.take(q.Runs[0].ID, map[string]any{"phone": "+34600444555"})
		m := ntFind(t, ntWait(t, w.app, a.ID, "given up", func(ms []ntMessage) bool { return ntHas(ms, "joined", "FAILED") }), "joined")
		if m.ErrorCode == nil || *m.ErrorCode != "RETRIES_EXHAUSTED" || m.Attempts != 2 {
			t.Fatalf("given up: %+v", m)
		}
		b := w.take(q.Runs[0].ID, map[string]any{"phone": "+34600444556"})
		ntWait(t, w.app, b.ID, "sent", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") })
		hits := rc.wait(t, 2, 20*time.Second)
		var statuses []string
		for _, h := range hits {
			var ev struct {
				Event string `json:"event"`
				Data  struct {
					NotificationID string  `json:"notificationId"`
					Status         string  `json:"status"`
					ErrorCode      *string `json:"errorCode"`
					QueueRunID     string  `json:"queueRunId"`
				} `json:"data"`
			}
			if err := json.Unmarshal(h.Body, &ev); err != nil || ev.Event != "notification.status" || ev.Data.QueueRunID == "" {
				t.Fatalf("webhook body: %s (%v)", h.Body, err)
			}
			statuses = append(statuses, ev.Data.Status)
		}
		sort.Strings(statuses)
		if strings.Join(statuses, ",") != "FAILED,SENT" {
			t.Fatalf("statuses told: %v", statuses)
		}
		r := w.app.Do(http.MethodGet, "/metrics", nil, nil)
		if !strings.Contains(string(r.Body), `qms_notifications_total{outcome="gave_up"} 1`) ||
			!strings.Contains(string(r.Body), `qms_notifications_total{outcome="sent"} 1`) {
			t.Fatalf("metrics: %s", grepLines(string(r.Body), "qms_notifications_total"))
		}
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
