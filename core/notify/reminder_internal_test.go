package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestReminderTimeSaysTheDateOnAnotherDay(t *testing.T) {
	madrid, err := time.LoadLocation("Europe/Madrid")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 9, 8, 30, 0, 0, time.UTC) // 09:30 in Madrid
	for _, c := range []struct {
		sent time.Time
		zone *time.Location
		want string
	}{
		{start.Add(-time.Hour), madrid, "09:30"},
		{time.Date(2026, 3, 8, 23, 0, 0, 0, time.UTC), madrid, "09:30"},             // 00:00 in Madrid, the same day
		{time.Date(2026, 3, 8, 22, 59, 0, 0, time.UTC), madrid, "2026-03-09 09:30"}, // 23:59 in Madrid, the day before
		{start.Add(-time.Hour), nil, "08:30"},                                       // no zone: UTC
	} {
		if got := ReminderTime(start, c.sent, c.zone); got != c.want {
			t.Errorf("sent %s in %v: %q, want %q", c.sent, c.zone, got, c.want)
		}
	}
}

func TestAMessageNamesItsTurnOrItsAppointment(t *testing.T) {
	for _, c := range []struct {
		m          Message
		turn, appt string
	}{
		{Message{TurnID: "trn_1"}, `"turnId":"trn_1"`, `"appointmentId":null`},
		{Message{AppointmentID: "apt_1"}, `"turnId":null`, `"appointmentId":"apt_1"`},
	} {
		b, err := json.Marshal(c.m)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.turn) || !strings.Contains(string(b), c.appt) || strings.Count(string(b), `"turnId"`) != 1 {
			t.Errorf("%s: want %s and %s", b, c.turn, c.appt)
		}
	}
	slot := "2026-03-09T08:30:00Z"
	r := Message{AppointmentID: "apt_1", Moment: MomentReminder, Occurrence: 1, Params: map[string]string{"slotStart": slot}}
	moved := r
	moved.Params = map[string]string{"slotStart": "2026-03-09T09:30:00Z"}
	if r.Key() != "appointment:apt_1:appointment_reminder:"+slot || r.Key() == moved.Key() {
		t.Errorf("keys: %q, %q", r.Key(), moved.Key())
	}
}
