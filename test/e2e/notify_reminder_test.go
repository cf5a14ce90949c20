package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/http/notifyhttp"
	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/fakeprovider"
)

// ntAppointmentMessages reads an appointment's messages.
func ntAppointmentMessages(t *testing.T, a *apptest.App, id string) []ntMessage {
	t.Helper()
	var out struct {
		Data []ntMessage `json:"data"`
	}
	a.API(http.MethodGet, "/appointments/"+id+"/notifications", nil).Must(http.StatusOK, &out)
	return out.Data
}

// ntAppointmentWait polls an appointment's messages until ok holds.
func ntAppointmentWait(t *testing.T, a *apptest.App, id, what string, d time.Duration, ok func([]ntMessage) bool) []ntMessage {
	t.Helper()
	end := time.Now().Add(d)
	for {
		ms := ntAppointmentMessages(t, a, id)
		if ok(ms) {
			return ms
		}
		if time.Now().After(end) {
			t.Fatalf("appointment %s: %s never held: %+v", id, what, ms)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ntSlots makes an APPOINTMENT queue (UTC) whose run has 1-minute slots
// from start on, a few of them, with the queue's notification settings.
func ntSlots(t *testing.T, w *turnWorld, start time.Time, settings map[string]any) (queueID, runID string, slots []client.Slot) {
	t.Helper()
	var q client.QueueView
	w.app.API(http.MethodPost, "/queues", map[string]any{"entityId": w.entity, "name": "Clinic", "type": "APPOINTMENT"}).
		Must(http.StatusCreated, &q)
	w.app.API(http.MethodPut, "/queues/"+q.ID+"/notifications", settings).Must(http.StatusOK, nil)
	end := start.Add(4 * time.Minute)
	if end.Day() != start.Day() {
		end = time.Date(start.Year(), start.Month(), start.Day(), 23, 59, 0, 0, time.UTC)
	}
	var b struct{ Slots []client.Slot }
	w.app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/slots", map[string]any{
		"date": start.Format(time.DateOnly), "startTime": start.Format("15:04"), "endTime": end.Format("15:04"),
		"slotMinutes": 1, "capacity": 10,
	}).Must(http.StatusCreated, &b)
	return q.ID, q.Runs[0].ID, b.Slots
}

// ntNextMinute is the first whole minute at least lead from now (UTC),
// kept off the last minutes of the day so a few slots fit after it.
func ntNextMinute(lead time.Duration) time.Time {
	at := time.Now().UTC().Add(lead).Truncate(time.Minute).Add(time.Minute)
	if at.Hour() == 23 && at.Minute() > 54 {
		at = time.Date(at.Year(), at.Month(), at.Day()+1, 0, 0, 0, 0, time.UTC)
	}
	return at
}

// TestNotifyAppointmentReminder books appointments with a phone on a
// process that sends through a fake Twilio: the reminder is held until
// the slot's start minus the queue's lead time, then reaches the provider
// once with the slot's time; a repeated booking (same idempotency key)
// adds nothing; a cancelled and a checked-in appointment's reminders are
// dropped and never sent; an appointment without a phone gets nothing; a
// booking inside the lead time is reminded at once, on WhatsApp and in
// the customer's language when it asked.
func TestNotifyAppointmentReminder(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		t.Parallel() // each waits for a minute's boundary: side by side
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		w := turnStart(t, start, ntTwilio(fake.URL()))
		rc := newWhReceiver(t, whStatic(http.StatusOK))
		whEndpoint(t, w.app, rc.URL(), "notification.status")

		// Bad settings and bodies are named.
		var q client.QueueView
		w.app.API(http.MethodPost, "/queues", map[string]any{"entityId": w.entity, "name": "Probe", "type": "APPOINTMENT"}).
			Must(http.StatusCreated, &q)
		if r := w.app.API(http.MethodPut, "/queues/"+q.ID+"/notifications", map[string]any{"reminderMinutes": 0}); r.Status != http.StatusBadRequest ||
			!strings.Contains(string(r.Body), `"path":"reminderMinutes"`) {
			t.Fatalf("reminderMinutes 0: %d %s", r.Status, r.Body)
		}
		if r := w.app.API(http.MethodPost, "/queue-runs/"+q.Runs[0].ID+"/appointments", map[string]any{"phone": "+34600111222", "language": "de"}); r.Status != http.StatusBadRequest ||
			!strings.Contains(string(r.Body), `"path":"language"`) {
			t.Fatalf("language de: %d %s", r.Status, r.Body)
		}

		// The reminder comes due at the next whole minute at least 15 s
		// away: slots start a minute after it, the lead time is a minute.
		due := ntNextMinute(15 * time.Second)
		_, run, slots := ntSlots(t, w, due.Add(time.Minute), map[string]any{
			"moments": []string{"joined", "appointment_reminder"}, "reminderMinutes": 1,
		})
		book := func(body map[string]any) client.Appointment {
			t.Helper()
			var a client.Appointment
			r := w.app.API(http.MethodPost, "/queue-runs/"+run+"/appointments", body)
			if r.Status != http.StatusCreated && r.Status != http.StatusOK {
				t.Fatalf("book %v: %d %s", body, r.Status, r.Body)
			}
			r.Decode(&a)
			return a
		}
		slot := slots[0].ID
		x := book(map[string]any{"slotId": slot, "phone": "+34600111222", "idempotencyKey": "reminder-x-1"})
		if again := book(map[string]any{"slotId": slot, "phone": "+34600111222", "idempotencyKey": "reminder-x-1"}); again.ID != x.ID {
			t.Fatalf("the repeated booking made another appointment: %s, %s", x.ID, again.ID)
		}
		cancelled := book(map[string]any{"slotId": slot, "phone": "+34600333444"})
		checkedIn := book(map[string]any{"slotId": slot, "phone": "+34600555666"})
		silent := book(map[string]any{"slotId": slot})

		ms := ntAppointmentMessages(t, w.app, x.ID)
		if len(ms) != 1 || ms[0].Moment != "appointment_reminder" || ms[0].Status != "QUEUED" || ms[0].To != "+34*******22" {
			t.Fatalf("before it is due, one queued reminder: %+v", ms)
		}
		w.app.API(http.MethodPost, "/appointments/"+cancelled.ID+"/cancel", nil).Must(http.StatusCreated, nil)
		w.app.API(http.MethodPost, "/appointments/"+checkedIn.ID+"/check-in", nil).Must(http.StatusCreated, nil)
		for id, why := range map[string]string{cancelled.ID: "cancelled", checkedIn.ID: "checked_in"} {
			ms := ntAppointmentMessages(t, w.app, id)
			if len(ms) != 1 || ms[0].Status != "DROPPED" || ms[0].ErrorCode == nil || *ms[0].ErrorCode != "LOST_POINT" {
				t.Fatalf("the %s appointment's reminder: %+v", why, ms)
			}
		}
		if ms := ntAppointmentMessages(t, w.app, silent.ID); len(ms) != 0 {
			t.Fatalf("an appointment without a phone got %+v", ms)
		}

		sent := ntAppointmentWait(t, w.app, x.ID, "reminder sent", time.Until(due)+20*time.Second, func(ms []ntMessage) bool {
			return len(ms) == 1 && ms[0].Status == "SENT"
		})[0]
		slotAt := due.Add(time.Minute).Format("15:04")
		if sent.Body != "Clinic: reminder, your appointment is at "+slotAt+"." || sent.Channel != "SMS" || sent.Provider != "twilio" {
			t.Fatalf("the reminder: %+v", sent)
		}
		got := fake.Messages()
		if len(got) != 1 || got[0].To != "+34600111222" || got[0].Body != sent.Body {
			t.Fatalf("the provider got %+v", got)
		}
		if got[0].At.Before(due) {
			t.Fatalf("the reminder reached the provider at %s, before it was due at %s", got[0].At, due)
		}

		// Inside the lead time: at once, on WhatsApp, in Spanish.
		_, run2, slots2 := ntSlots(t, w, ntNextMinute(time.Minute), map[string]any{"moments": []string{"appointment_reminder"}})
		var late client.Appointment
		w.app.API(http.MethodPost, "/queue-runs/"+run2+"/appointments", map[string]any{
			"slotId": slots2[0].ID, "phone": "+34600777888", "notifyWhatsapp": true, "language": "es",
		}).Must(http.StatusCreated, &late)
		if !late.NotifyWhatsapp || late.Language == nil || *late.Language != "es" {
			t.Fatalf("the appointment's answer: %+v", late)
		}
		m := ntAppointmentWait(t, w.app, late.ID, "sent at once", 20*time.Second, func(ms []ntMessage) bool {
			return len(ms) == 1 && ms[0].Status == "SENT"
		})[0]
		if m.Channel != "WHATSAPP" || !strings.HasPrefix(m.Body, "Clinic: recordatorio, su cita es a las ") {
			t.Fatalf("the late booking's reminder: %+v", m)
		}

		// Once each, and nothing for the dropped ones, after a while.
		time.Sleep(300 * time.Millisecond)
		count := map[string]int{}
		for _, r := range fake.Messages() {
			count[r.To]++
		}
		if len(count) != 2 || count["+34600111222"] != 1 || count["+34600777888"] != 1 {
			t.Fatalf("messages per number: %v", count)
		}
		for _, id := range []string{cancelled.ID, checkedIn.ID} {
			if ms := ntAppointmentMessages(t, w.app, id); ms[0].Status != "DROPPED" {
				t.Fatalf("a dropped reminder moved on: %+v", ms)
			}
		}
		// Each status change reached the webhook endpoint, naming the
		// appointment and no turn.
		told := map[string]string{}
		for _, h := range rc.wait(t, 4, 20*time.Second) {
			var b whBody
			var d struct {
				AppointmentID *string `json:"appointmentId"`
				TurnID        *string `json:"turnId"`
				Moment        string  `json:"moment"`
				Status        string  `json:"status"`
			}
			if err := json.Unmarshal(h.Body, &b); err != nil || json.Unmarshal(b.Data, &d) != nil ||
				b.Event != "notification.status" || d.AppointmentID == nil || d.TurnID != nil || d.Moment != "appointment_reminder" ||
				!strings.Contains(string(b.Data), `"turnId":null`) {
				t.Fatalf("webhook body: %s", h.Body)
			}
			told[*d.AppointmentID] += d.Status
		}
		if told[x.ID] != "SENT" || told[late.ID] != "SENT" || told[cancelled.ID] != "DROPPED" || told[checkedIn.ID] != "DROPPED" || len(told) != 4 {
			t.Fatalf("statuses told: %v", told)
		}
		if testing.Verbose() {
			fmt.Println(fake.Conversation())
		}
	})
}

// TestNotifyReminderWaitsOutQuietHours: an account whose quiet hours
// cover now books an appointment inside the lead time. Its reminder is
// due at once but stays QUEUED, saying until when, and reaches the
// provider only after the quiet hours end (the next whole minute, at
// least 15 s away); a turn's live moment (joined) of the same account goes
// at once (only reminders wait).
func TestNotifyReminderWaitsOutQuietHours(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		t.Parallel() // each waits for a minute's boundary: side by side
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		w := turnStart(t, start, ntTwilio(fake.URL()))

		end := ntNextMinute(15 * time.Second)
		w.app.API(http.MethodPut, notifyhttp.SettingsPath, map[string]any{"quietHours": map[string]any{
			"timezone": "UTC", "start": end.Add(-2 * time.Hour).Format("15:04"), "end": end.Format("15:04"),
		}}).Must(http.StatusOK, nil)

		_, run, slots := ntSlots(t, w, ntNextMinute(time.Minute), map[string]any{"moments": []string{"appointment_reminder"}})
		var a client.Appointment
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/appointments", map[string]any{
			"slotId": slots[0].ID, "phone": "+34600123456",
		}).Must(http.StatusCreated, &a)
		held := ntAppointmentWait(t, w.app, a.ID, "held for the quiet hours", 10*time.Second, func(ms []ntMessage) bool {
			return len(ms) == 1 && ms[0].Status == "QUEUED" && ms[0].Error != nil && strings.Contains(*ms[0].Error, "quiet hours")
		})[0]
		if len(fake.Messages()) != 0 {
			t.Fatalf("sent inside the quiet hours: %+v (message %+v)", fake.Messages(), held)
		}

		sent := ntAppointmentWait(t, w.app, a.ID, "sent after the quiet hours", time.Until(end)+20*time.Second, func(ms []ntMessage) bool {
			return len(ms) == 1 && ms[0].Status == "SENT"
		})[0]
		got := fake.Messages()
		if len(got) != 1 || got[0].To != "+34600123456" || got[0].Body != sent.Body {
			t.Fatalf("the provider got %+v", got)
		}
		if got[0].At.Before(end) {
			t.Fatalf("the reminder reached the provider at %s, before the quiet hours ended at %s", got[0].At, end)
		}
	})
}

// TestNotifyHybridCheckInCarriesThePhone: on a HYBRID queue, an
// appointment booked with a phone and checked in early joins the line at
// its slot's start as a turn with that phone, so the customer hears the
// turn's moments (joined with the ticket link, then called) like a
// walk-in, in the language the booking chose (Spanish here, the queue's
// is English); an appointment booked without one gets nothing.
func TestNotifyHybridCheckInCarriesThePhone(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		t.Parallel() // each waits for a minute's boundary: side by side
		fake := fakeprovider.NewTwilio(ntSID, ntToken)
		defer fake.Close()
		w := turnStart(t, start, ntTwilio(fake.URL()))
		var q client.QueueView
		w.app.API(http.MethodPost, "/queues", map[string]any{"entityId": w.entity, "name": "Clinic", "type": "HYBRID",
			"stations": []any{map[string]any{"label": "Desk 1"}}}).Must(http.StatusCreated, &q)
		w.app.API(http.MethodPut, "/queues/"+q.ID+"/notifications", map[string]any{"moments": []string{"joined", "called"}}).Must(http.StatusOK, nil)
		run := q.Runs[0].ID
		at := ntNextMinute(15 * time.Second)
		var slots struct{ Slots []client.Slot }
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/slots", map[string]any{
			"date": at.Format(time.DateOnly), "startTime": at.Format("15:04"), "endTime": at.Add(2 * time.Minute).Format("15:04"),
			"slotMinutes": 1, "capacity": 5,
		}).Must(http.StatusCreated, &slots)
		var withPhone, without client.Appointment
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/appointments", map[string]any{"slotId": slots.Slots[0].ID, "phone": "+34600999888", "language": "es"}).
			Must(http.StatusCreated, &withPhone)
		w.app.API(http.MethodPost, "/queue-runs/"+run+"/appointments", map[string]any{"slotId": slots.Slots[0].ID}).
			Must(http.StatusCreated, &without)
		for _, id := range []string{withPhone.ID, without.ID} {
			w.app.API(http.MethodPost, "/appointments/"+id+"/check-in", nil).Must(http.StatusCreated, nil)
		}
		turnOf := func(id string) string {
			t.Helper()
			end := time.Now().Add(time.Until(at) + 20*time.Second)
			for {
				var a client.Appointment
				w.app.API(http.MethodGet, "/appointments/"+id, nil).Must(http.StatusOK, &a)
				if a.TurnID != nil {
					return *a.TurnID
				}
				if time.Now().After(end) {
					t.Fatalf("appointment %s never joined the line (slot at %s)", id, at)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		tp, tn := turnOf(withPhone.ID), turnOf(without.ID)
		j := ntFind(t, ntWait(t, w.app, tp, "joined", func(ms []ntMessage) bool { return ntHas(ms, "joined", "SENT") }), "joined")
		if j.To != "+34*******88" || !strings.Contains(j.Body, w.app.BaseURL+"/ticket/") || !strings.Contains(j.Body, "su turno es el") {
			t.Fatalf("the checked-in appointment's joined message (in Spanish, the booking's language): %+v", j)
		}
		w.app.API(http.MethodPost, "/turns/"+tp+"/call", map[string]any{"stationId": q.Stations[0].ID}).Must(http.StatusCreated, nil)
		c := ntFind(t, ntWait(t, w.app, tp, "called", func(ms []ntMessage) bool { return ntHas(ms, "called", "SENT") }), "called")
		if !strings.Contains(c.Body, "Desk 1") || !strings.Contains(c.Body, "es su turno") {
			t.Fatalf("called (in Spanish): %+v", c)
		}
		if ms := ntMessages(t, w.app, tn); len(ms) != 0 {
			t.Fatalf("an appointment without a phone: %+v", ms)
		}
		if got := fake.Messages(); len(got) != 2 || got[0].To != "+34600999888" || got[1].To != "+34600999888" {
			t.Fatalf("the provider got %+v", got)
		}
	})
}
