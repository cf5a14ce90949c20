package turns_test

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/location"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// TestOpenNowSaysWhenItOpens: the join page's "opens at" is the next
// shift's start less opensBeforeMinutes, in the queue's zone; open, or a
// schedule that does not open within three days, has none.
func TestOpenNowSaysWhenItOpens(t *testing.T) {
	madrid := "Europe/Madrid"
	q := queues.Queue{Location: &location.Location{Timezone: &madrid}, Schedule: queues.Schedule{
		Mode: platform.Ptr(queues.ScheduleWeekly), OpensBeforeMinutes: platform.Ptr(30),
		Weekly: []queues.WeeklyHours{{Day: platform.Ptr(1), Open: platform.Ptr("09:00"), Close: platform.Ptr("14:00")}},
	}}
	zone, _ := time.LoadLocation(madrid)
	sunday := time.Date(2026, 3, 1, 12, 0, 0, 0, zone) // a Sunday
	open, next := turns.OpenNow(q, sunday)
	if want := time.Date(2026, 3, 2, 8, 30, 0, 0, zone); open || next == nil || !next.Equal(want) {
		t.Fatalf("Sunday noon: open %v, next %v; want closed, next %v", open, next, want)
	}
	if open, next := turns.OpenNow(q, time.Date(2026, 3, 2, 8, 45, 0, 0, zone)); !open || next != nil {
		t.Fatalf("Monday 08:45 (in the 30 minutes before): open %v, next %v", open, next)
	}
	if open, next := turns.OpenNow(q, time.Date(2026, 3, 5, 12, 0, 0, 0, zone)); open || next != nil {
		t.Fatalf("Thursday: the next Monday is past three days: open %v, next %v", open, next)
	}
	if open, next := turns.OpenNow(queues.Queue{}, sunday); !open || next != nil {
		t.Fatalf("no schedule: open %v, next %v", open, next)
	}
}
