package turns

import (
	"fmt"
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
// interval is taken on its own day in the queue's time zone, from open
// minus opensBeforeMinutes to close minus closesBeforeMinutes (close
// exclusive). Intervals of the day before and after are looked at too,
// since opensBeforeMinutes can reach back past midnight. Mode "always"
// (or no mode) is always open.
func openAt(s queues.Schedule, zone *time.Location, now time.Time) bool {
	if s.Mode == nil || *s.Mode != queues.ScheduleWeekly {
		return true
	}
	before := time.Duration(platform.Deref(s.OpensBeforeMinutes, 0)) * time.Minute
	closesBefore := time.Duration(platform.Deref(s.ClosesBeforeMinutes, 0)) * time.Minute
	local := now.In(zone)
	y, m, d := local.Date()
	for shift := -1; shift <= 1; shift++ {
		day := time.Date(y, m, d+shift, 0, 0, 0, 0, zone)
		for _, w := range s.Weekly {
			if w.Day == nil || w.Open == nil || w.Close == nil || time.Weekday(*w.Day) != day.Weekday() {
				continue
			}
			start := at(day, *w.Open).Add(-before)
			end := at(day, *w.Close).Add(-closesBefore)
			if !now.Before(start) && now.Before(end) {
				return true
			}
		}
	}
	return false
}

// at is the wall-clock time hhmm on day (in day's zone). Wall times that a
// DST jump skips resolve the way time.Date resolves them.
func at(day time.Time, hhmm string) time.Time {
	h, _ := strconv.Atoi(hhmm[:2])
	m, _ := strconv.Atoi(hhmm[3:])
	y, mo, d := day.Date()
	return time.Date(y, mo, d, h, m, 0, 0, day.Location())
}
