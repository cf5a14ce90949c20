package history

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// checkReminders reads the messages of every appointment booked, once
// their jobs have drained (the reminders of tomorrow's slots are due at
// once: the queue's lead time is two days), and checks: at most one
// reminder per appointment; nothing for an appointment booked without a
// phone; none left QUEUED; a reminder DROPPED only for an appointment
// that is no longer SCHEDULED. It logs the counts per status.
func (wl *workload) checkReminders(t *testing.T, ck *checker, ops []*Op) {
	t.Helper()
	phone := map[string]bool{}
	for _, o := range ops {
		if o.Kind != "book" || o.Status != http.StatusCreated {
			continue
		}
		var a struct{ ID string }
		if err := json.Unmarshal(o.Body, &a); err != nil || a.ID == "" {
			t.Fatalf("book answer: %s", o.Body)
		}
		phone[a.ID] = strings.Contains(string(o.Req), `"phone"`)
	}
	get := func(path string, out any) {
		o := wl.c.do(req{client: -1, kind: "notifications", method: http.MethodGet, path: path})
		if o.Status != http.StatusOK {
			t.Fatalf("%s: %s", path, o)
		}
		if err := json.Unmarshal(o.Body, out); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	read := func(id string) []notification {
		var out struct{ Data []notification }
		get("/appointments/"+id+"/notifications", &out)
		return out.Data
	}
	got := map[string][]notification{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		queued := 0
		for id := range phone {
			got[id] = read(id)
			for _, m := range got[id] {
				if m.Status == "QUEUED" {
					queued++
				}
			}
		}
		if queued == 0 || time.Now().After(deadline) {
			ck.check("reminders: none left QUEUED once the jobs drained", queued == 0, "%d reminders QUEUED", queued)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	counts := map[string]int{}
	for id, withPhone := range phone {
		ms := got[id]
		if !withPhone {
			ck.check("reminders: nothing for an appointment without a phone", len(ms) == 0, "appointment %s: %d messages", id, len(ms))
			continue
		}
		ck.check("reminders: at most one per appointment", len(ms) <= 1, "appointment %s: %d messages", id, len(ms))
		for _, m := range ms {
			counts[m.Status]++
			if m.Status == "DROPPED" {
				var a struct{ Status string }
				get("/appointments/"+id, &a)
				ck.check("reminders: dropped only once the appointment left SCHEDULED", a.Status != "SCHEDULED",
					"appointment %s: reminder dropped, appointment %s", id, a.Status)
			}
		}
	}
	var parts []string
	for st, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(parts)
	withPhone := 0
	for _, p := range phone {
		if p {
			withPhone++
		}
	}
	t.Logf("reminders of %d appointments (%d with a phone): %s", len(phone), withPhone, strings.Join(parts, ", "))
}
