package notify

import (
	"strconv"
	"strings"
	"testing"
)

func TestMomentsOfChanges(t *testing.T) {
	phone := "+34600111222"
	for _, c := range []struct {
		name string
		c    TurnChange
		want string
	}{
		{"a new turn joined", TurnChange{After: "WAITING"}, "joined:1"},
		{"a forwarded turn", TurnChange{After: "WAITING", Forwarded: true}, "forwarded:1"},
		{"the first call", TurnChange{Before: "WAITING", After: "CALLED", Calls: 1}, "called:1"},
		{"a recall", TurnChange{Before: "CALLED", After: "CALLED", BeforeCalls: 2, Calls: 3}, "called_again:3"},
		{"a call straight into service", TurnChange{Before: "WAITING", After: "IN_SERVICE", Calls: 1}, ""},
		{"a no-show", TurnChange{Before: "CALLED", After: "NO_SHOW", BeforeCalls: 2, Calls: 2}, "no_show:2"},
		{"cancelled by staff", TurnChange{Before: "WAITING", After: "CANCELLED", Reason: "staff"}, "cancelled:1"},
		{"tolerance ran out", TurnChange{Before: "CALLED", After: "CANCELLED", Reason: "tolerance_expired", Calls: 1}, "cancelled:1"},
		{"the customer left", TurnChange{Before: "WAITING", After: "CANCELLED", Reason: "customer"}, ""},
		{"an arrival", TurnChange{Before: "CALLED", After: "CALLED", BeforeCalls: 1, Calls: 1}, ""},
		{"completed", TurnChange{Before: "IN_SERVICE", After: "COMPLETED", Calls: 1}, ""},
	} {
		c.c.Phone = &phone
		var got []string
		for _, m := range moments(c.c) {
			got = append(got, m.moment+":"+itoa(m.occ))
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%s: %v, want %q", c.name, got, c.want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestLostPoint(t *testing.T) {
	for _, c := range []struct {
		m    Message
		t    TurnNow
		lost bool
	}{
		{Message{Moment: MomentJoined}, TurnNow{Status: "WAITING"}, false},
		{Message{Moment: MomentJoined}, TurnNow{Status: "CALLED", CallCount: 1}, true},
		{Message{Moment: MomentNearFront}, TurnNow{Status: "WAITING"}, false},
		{Message{Moment: MomentNearFront}, TurnNow{Status: "HELD"}, true},
		{Message{Moment: MomentCalled, Occurrence: 1}, TurnNow{Status: "CALLED", CallCount: 1}, false},
		{Message{Moment: MomentCalled, Occurrence: 1}, TurnNow{Status: "IN_SERVICE", CallCount: 1}, true},
		{Message{Moment: MomentCalledAgain, Occurrence: 2}, TurnNow{Status: "CALLED", CallCount: 3}, true},
		{Message{Moment: MomentCalledAgain, Occurrence: 3}, TurnNow{Status: "CALLED", CallCount: 3}, false},
		{Message{Moment: MomentNoShow}, TurnNow{Status: "WAITING", CallCount: 1}, true},
		{Message{Moment: MomentCancelled}, TurnNow{Status: "CANCELLED", Finished: true}, false},
		{Message{Moment: MomentCancelled}, TurnNow{Status: "WAITING"}, true},
	} {
		if got := lostPoint(c.m, c.t) != ""; got != c.lost {
			t.Errorf("%s %d at %+v: lost %v, want %v", c.m.Moment, c.m.Occurrence, c.t, got, c.lost)
		}
	}
}

func TestStatusesNeverGoBack(t *testing.T) {
	order := []string{StatusQueued, StatusSent, StatusDelivered, StatusRead}
	for i := 1; i < len(order); i++ {
		if rank(order[i]) <= rank(order[i-1]) {
			t.Errorf("%s does not follow %s", order[i], order[i-1])
		}
	}
	if rank(StatusUndelivered) != rank(StatusDelivered) || rank(StatusFailed) <= rank(StatusRead) {
		t.Error("final statuses")
	}
}

func TestReplyKeywords(t *testing.T) {
	for text, want := range map[string]string{
		"stop": ReplyStop, " STOP please": ReplyStop, "cancel": ReplyStop, "Unsubscribe": ReplyStop,
		"start": ReplyStart, "yes": ReplyStart, "leave": ReplyLeave, "Salir": ReplyLeave,
		"here": ReplyHere, "aquí": ReplyHere, "hello": "", "": "",
	} {
		if got := keyword(text); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
}

func TestRenderAndMask(t *testing.T) {
	p := map[string]string{"queue": "Caja", "code": "A7", "station": "Ventanilla 2"}
	if got := Render(MomentCalled, "es", p); got != "Caja: A7, es su turno. Diríjase a Ventanilla 2." {
		t.Errorf("es: %q", got)
	}
	if got := Render(MomentCalled, "de", p); !strings.HasPrefix(got, "Caja: A7, it is your turn") {
		t.Errorf("a language without texts falls back to English: %q", got)
	}
	if got := Params(MomentCalled, p); strings.Join(got, "|") != "Caja|A7|Ventanilla 2" {
		t.Errorf("params: %v", got)
	}
	for _, l := range Languages {
		for _, m := range Moments {
			if texts[m][l] == "" {
				t.Errorf("no %s text for %s", l, m)
			}
		}
	}
	if got := Mask("+34600111222"); got != "+34*******22" {
		t.Errorf("mask: %q", got)
	}
}
