package turns

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// TestOpeningHoursAcrossMidnight checks openAt at the boundaries of
// shifts that cross midnight, are split at it, run around the clock, and
// meet a daylight-saving change, in a few time zones.
func TestOpeningHoursAcrossMidnight(t *testing.T) {
	zone := func(name string) *time.Location {
		z, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	madrid, ny, tokyo := zone("Europe/Madrid"), zone("America/New_York"), zone("Asia/Tokyo")
	hours := func(day int, open, close string) queues.WeeklyHours {
		return queues.WeeklyHours{Day: &day, Open: &open, Close: &close}
	}
	weekly := func(before, closesBefore int, hs ...queues.WeeklyHours) queues.Schedule {
		return queues.Schedule{Mode: platform.Ptr(queues.ScheduleWeekly), Weekly: hs,
			OpensBeforeMinutes: &before, ClosesBeforeMinutes: &closesBefore}
	}
	var allWeek []queues.WeeklyHours
	for d := range 7 {
		allWeek = append(allWeek, hours(d, "00:00", "24:00"))
	}
	// 2026-03-02 is a Monday (day 1).
	local := func(z *time.Location, day, hh, mm int) time.Time { return time.Date(2026, 3, day, hh, mm, 0, 0, z) }
	cases := []struct {
		name string
		s    queues.Schedule
		z    *time.Location
		at   time.Time
		want bool
	}{
		{"overnight: before it opens", weekly(0, 0, hours(1, "22:00", "02:00")), madrid, local(madrid, 2, 21, 59), false},
		{"overnight: at its open", weekly(0, 0, hours(1, "22:00", "02:00")), madrid, local(madrid, 2, 22, 0), true},
		{"overnight: past midnight", weekly(0, 0, hours(1, "22:00", "02:00")), madrid, local(madrid, 3, 1, 59), true},
		{"overnight: at its close", weekly(0, 0, hours(1, "22:00", "02:00")), madrid, local(madrid, 3, 2, 0), false},
		{"overnight: opensBefore reaches back", weekly(30, 0, hours(1, "22:00", "02:00")), tokyo, local(tokyo, 2, 21, 30), true},
		{"split at midnight: closesBefore cuts the shift's end, not midnight",
			weekly(0, 30, hours(1, "22:00", "24:00"), hours(2, "00:00", "02:00")), madrid, local(madrid, 2, 23, 45), true},
		{"split at midnight: open up to closesBefore of the real end",
			weekly(0, 30, hours(1, "22:00", "24:00"), hours(2, "00:00", "02:00")), madrid, local(madrid, 3, 1, 29), true},
		{"split at midnight: closed from closesBefore of the real end",
			weekly(0, 30, hours(1, "22:00", "24:00"), hours(2, "00:00", "02:00")), madrid, local(madrid, 3, 1, 30), false},
		{"24:00 includes the last minute", weekly(0, 0, hours(1, "08:00", "24:00")), madrid, local(madrid, 2, 23, 59), true},
		{"24:00 is exclusive", weekly(0, 0, hours(1, "08:00", "24:00")), madrid, local(madrid, 3, 0, 0), false},
		{"around the clock is never closed, even with closesBefore", weekly(0, 60, allWeek...), tokyo, local(tokyo, 8, 23, 59), true},
		{"around the clock at midnight", weekly(0, 60, allWeek...), ny, local(ny, 9, 0, 0), true},
		// 2026-03-08 is a Sunday: New York springs forward at 02:00 EST.
		// Saturday 22:00 to Sunday 04:00 is five real hours.
		{"DST: open after the jump", weekly(0, 0, hours(6, "22:00", "04:00")), ny, local(ny, 8, 3, 30), true},
		{"DST: closed at the close", weekly(0, 0, hours(6, "22:00", "04:00")), ny, local(ny, 8, 4, 0), false},
		{"DST: closesBefore 60 closes at 03:00 EDT", weekly(0, 60, hours(6, "22:00", "04:00")), ny, local(ny, 8, 3, 0), false},
		{"DST: closesBefore 60 still open at 01:59 EST", weekly(0, 60, hours(6, "22:00", "04:00")), ny, local(ny, 8, 1, 59), true},
	}
	for _, c := range cases {
		if got := openAt(c.s, c.z, c.at); got != c.want {
			t.Errorf("%s (%s): open = %v, want %v", c.name, c.at.Format(time.RFC3339), got, c.want)
		}
	}
}
