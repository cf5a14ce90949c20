package turns

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// numberingPeriod is the numbering period a turn taken at now counts in:
// the day in the queue's time zone with schedule.resetNumberingDaily, so
// numbering starts again at 1 each local midnight; one period for the
// run's life ("") otherwise. A switch of the setting takes effect at the
// next local midnight: Repository.NextNumber carries the count on until
// then.
func numberingPeriod(q queues.Queue, now time.Time) string {
	if !platform.Deref(q.Schedule.ResetNumberingDaily, false) {
		return ""
	}
	return now.In(q.Zone()).Format(time.DateOnly)
}

// displayCode is prefix + number zero-padded to padding digits (padding 0:
// no padding; a number wider than padding is shown whole).
func displayCode(prefix string, padding, number int) string {
	return prefix + fmt.Sprintf("%0*d", padding, number)
}

// openAt reports whether a weekly schedule takes turns at now. Each weekly
// interval is taken on its own day in the queue's time zone, from open to
// close, past midnight into the next day when close is earlier than open
// (24:00 is the end of the day). Intervals that touch or overlap make one
// shift; the schedule takes turns from a shift's start minus
// opensBeforeMinutes to its end minus closesBeforeMinutes (end exclusive).
// A queue open around the clock has one endless shift and never closes.
// Mode "always" (or no mode) is always open.
func openAt(s queues.Schedule, zone *time.Location, now time.Time) bool {
	if s.Mode == nil || *s.Mode != queues.ScheduleWeekly {
		return true
	}
	before := time.Duration(platform.Deref(s.OpensBeforeMinutes, 0)) * time.Minute
	closesBefore := time.Duration(platform.Deref(s.ClosesBeforeMinutes, 0)) * time.Minute
	for _, sh := range shifts(s.Weekly, zone, now) {
		if !now.Before(sh.start.Add(-before)) && now.Before(sh.end.Add(-closesBefore)) {
			return true
		}
	}
	return false
}

// shift is a stretch of opening hours, as instants.
type shift struct{ start, end time.Time }

// shifts returns the opening intervals of the days around now (three days
// each way, which covers the longest lead, 1,440 minutes, on either side),
// merged where they touch or overlap, in order.
func shifts(weekly []queues.WeeklyHours, zone *time.Location, now time.Time) []shift {
	local := now.In(zone)
	y, m, d := local.Date()
	var out []shift
	for off := -3; off <= 3; off++ {
		day := time.Date(y, m, d+off, 0, 0, 0, 0, zone)
		for _, w := range weekly {
			if w.Day == nil || w.Open == nil || w.Close == nil || time.Weekday(*w.Day) != day.Weekday() {
				continue
			}
			start, end := at(day, *w.Open), at(day, *w.Close)
			if !end.After(start) {
				end = at(day.AddDate(0, 0, 1), *w.Close) // runs past midnight
			}
			out = append(out, shift{start, end})
		}
	}
	slices.SortFunc(out, func(a, b shift) int { return a.start.Compare(b.start) })
	merged := out[:0]
	for _, sh := range out {
		if n := len(merged); n > 0 && !sh.start.After(merged[n-1].end) {
			if sh.end.After(merged[n-1].end) {
				merged[n-1].end = sh.end
			}
			continue
		}
		merged = append(merged, sh)
	}
	return merged
}

// at is the wall-clock time hhmm on day (in day's zone); 24:00 is the
// next midnight. Wall times that a DST jump skips resolve the way
// time.Date resolves them.
func at(day time.Time, hhmm string) time.Time {
	h, _ := strconv.Atoi(hhmm[:2])
	m, _ := strconv.Atoi(hhmm[3:])
	y, mo, d := day.Date()
	return time.Date(y, mo, d, h, m, 0, 0, day.Location())
}

// OpenNow reports whether the queue's schedule takes turns at now (the
// rule intake applies; allowOutsideHours is the caller's to weigh) and,
// when it does not, when it opens next within the next three days (nil
// when it does not, or the schedule never opens in that time). The join
// page tells a customer "opens at 09:00" with it.
func OpenNow(q queues.Queue, now time.Time) (bool, *time.Time) {
	s := q.Schedule
	if openAt(s, q.Zone(), now) {
		return true, nil
	}
	before := time.Duration(platform.Deref(s.OpensBeforeMinutes, 0)) * time.Minute
	for _, sh := range shifts(s.Weekly, q.Zone(), now) {
		if at := sh.start.Add(-before); at.After(now) {
			at = at.UTC()
			return false, &at
		}
	}
	return false, nil
}
