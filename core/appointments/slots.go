package appointments

import (
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// Window is one slot's time span before it is stored.
type Window struct {
	Start, End time.Time
}

// PlanDay returns the slot windows of one local day of zone: from the
// instant the zone's clocks show startTime on date to the instant they show
// endTime, in steps of slotMinutes of elapsed time. A last step that would
// end after endTime is not made.
//
// Steps are of real time, not of wall-clock readings, so every slot lasts
// exactly slotMinutes even on the days daylight saving time begins or ends:
// a day that loses an hour has fewer slots (the hour that does not exist
// has none), a day that gains one has more (the repeated hour has slots
// twice, at different instants). startTime and endTime are read as
// localInstant reads them.
//
// in must have passed Validate. The result is empty when the window is
// shorter than one slot on that day (say 02:00-03:00 on the day the clocks
// skip from 02:00 to 03:00).
func PlanDay(in GenerateInput, zone *time.Location) []Window {
	day, _ := time.Parse(time.DateOnly, *in.Date)
	start := localInstant(day, clockMinutes(*in.StartTime), zone)
	end := localInstant(day, clockMinutes(*in.EndTime), zone)
	step := time.Duration(*in.SlotMinutes) * time.Minute
	var out []Window
	for t := start; !t.Add(step).After(end); t = t.Add(step) {
		out = append(out, Window{Start: t.UTC(), End: t.Add(step).UTC()})
	}
	return out
}

// localInstant returns the instant at which the clocks of zone show the
// given minutes after midnight on day. A reading the clocks skip (02:30 on
// the day they jump from 02:00 to 03:00) is moved forward by the length of
// the jump (03:30); a reading they show twice (01:30 on the day they fall
// back from 02:00 to 01:00) is its first occurrence. time.Date leaves both
// cases unspecified, and in practice resolves them differently east and
// west of Greenwich, hence this function.
func localInstant(day time.Time, minutes int, zone *time.Location) time.Time {
	y, m, d := day.Date()
	naive := time.Date(y, m, d, minutes/60, minutes%60, 0, 0, time.UTC)
	// The zone's offsets around that reading: a transition near it has one
	// offset before and another after, and both are found a day away.
	var candidates []time.Time
	seen := map[int]bool{}
	for _, probe := range []time.Time{naive.Add(-24 * time.Hour), naive, naive.Add(24 * time.Hour)} {
		_, off := probe.In(zone).Zone()
		if seen[off] {
			continue
		}
		seen[off] = true
		candidates = append(candidates, naive.Add(-time.Duration(off)*time.Second))
	}
	var first, latest time.Time
	for _, c := range candidates {
		if latest.IsZero() || c.After(latest) {
			latest = c
		}
		if wall := c.In(zone); wall.Hour()*60+wall.Minute() == minutes && wall.Day() == d {
			if first.IsZero() || c.Before(first) {
				first = c
			}
		}
	}
	if !first.IsZero() {
		return first
	}
	// In a gap: the clocks go from offset A to a larger offset B. Read with
	// A, the reading lands after the jump, shifted forward by B-A; that is
	// the latest candidate.
	return latest
}

// checkDate refuses a day that is already over in zone at now: its slots
// could never be booked.
func checkDate(date string, zone *time.Location, now time.Time) error {
	today := now.In(zone).Format(time.DateOnly)
	if date < today {
		return platform.Unprocessable(CodeSlotDateInPast, "date "+date+" is over in the queue's timezone",
			map[string]any{"date": date, "today": today, "timezone": zone.String()})
	}
	return nil
}
