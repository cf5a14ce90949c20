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

// notification is the part of a turn's message the checks read.
type notification struct {
	Moment     string
	Occurrence int
	Channel    string
	Status     string
	ErrorCode  *string
}

// checkNotifications reads the messages of every turn taken with a phone
// once their jobs have drained (the log outbox sends at once) and checks:
// each moment at most once per turn and occurrence; a call's message
// never beyond the turn's calls; none left QUEUED; nothing for a turn
// without a phone. It logs the counts per moment and status.
func (wl *workload) checkNotifications(t *testing.T, ck *checker, ops []*Op, s *state) {
	t.Helper()
	phones, none := map[string]bool{}, map[string]bool{}
	for _, o := range ops {
		if o.Kind != "intake" || o.Status != http.StatusCreated {
			continue
		}
		id := o.TurnView().ID
		if strings.Contains(string(o.Req), `"phone"`) {
			phones[id] = true
		} else if len(none) < 50 {
			none[id] = true
		}
	}
	read := func(id string) []notification {
		o := wl.c.do(req{client: -1, kind: "notifications", method: http.MethodGet, path: "/turns/" + id + "/notifications"})
		if o.Status != http.StatusOK {
			t.Fatalf("notifications: %s", o)
		}
		var out struct{ Data []notification }
		if err := json.Unmarshal(o.Body, &out); err != nil {
			t.Fatalf("notifications: %v", err)
		}
		return out.Data
	}
	got := map[string][]notification{}
	deadline := time.Now().Add(30 * time.Second)
	for pending := phones; len(pending) > 0; {
		next := map[string]bool{}
		for id := range pending {
			ms := read(id)
			got[id] = ms
			for _, m := range ms {
				if m.Status == "QUEUED" {
					next[id] = true
				}
			}
		}
		if len(next) == 0 || time.Now().After(deadline) {
			ck.check("notifications: none left QUEUED once the jobs drained", len(next) == 0, "%d turns with a QUEUED message", len(next))
			break
		}
		pending = next
		time.Sleep(200 * time.Millisecond)
	}
	counts := map[string]map[string]int{}
	for id, ms := range got {
		seen := map[string]bool{}
		final, known := s.byID[id]
		for _, m := range ms {
			if counts[m.Moment] == nil {
				counts[m.Moment] = map[string]int{}
			}
			counts[m.Moment][m.Status]++
			key := fmt.Sprintf("%s:%d:%s", m.Moment, m.Occurrence, m.Channel)
			ck.check("notifications: each moment at most once per turn and occurrence", !seen[key], "turn %s: %s twice", id, key)
			seen[key] = true
			switch m.Moment {
			case "called", "called_again":
				calls := final.CallCount
				if !known || m.Occurrence > calls {
					// The quiescent read may predate the checker's drains
					// (which call turns): the turn as it is now.
					o := wl.c.do(req{client: -1, kind: "notifications", method: http.MethodGet, path: "/turns/" + id})
					calls = o.TurnView().CallCount
				}
				ck.check("notifications: a call's message never beyond the turn's calls", m.Occurrence <= calls,
					"turn %s: %s occurrence %d, %d calls", id, m.Moment, m.Occurrence, calls)
			case "joined":
				ck.check("notifications: one joined per turn", m.Occurrence == 1, "turn %s: joined occurrence %d", id, m.Occurrence)
			}
		}
	}
	for id := range none {
		ck.check("notifications: nothing for a turn without a phone", len(read(id)) == 0, "turn %s", id)
	}
	var lines []string
	for moment, by := range counts {
		var parts []string
		total := 0
		for st, n := range by {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
			total += n
		}
		sort.Strings(parts)
		lines = append(lines, fmt.Sprintf("  %-14s %5d  (%s)", moment, total, strings.Join(parts, ", ")))
	}
	sort.Strings(lines)
	t.Logf("notifications of %d turns with a phone:\n%s", len(phones), strings.Join(lines, "\n"))
}
