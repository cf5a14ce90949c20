package notify

import (
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// QuietHours are the hours of the day, in the business's timezone, when
// reminders are not sent: a reminder due inside them waits for their end.
// Only appointment reminders wait (they are planned ahead and lose nothing
// by an hour); a turn's live moments (called, near the front...) go at
// once, since the customer is in the line now. Start after End spans
// midnight (22:00-08:00).
type QuietHours struct {
	Timezone string `json:"timezone"`
	Start    string `json:"start"`
	End      string `json:"end"`
}

// Deferred moments wait out the quiet hours.
func Deferred(moment string) bool { return moment == MomentReminder }

func (q QuietHours) validate(v *platform.Validator, path string) {
	if _, err := time.LoadLocation(q.Timezone); err != nil || q.Timezone == "" || q.Timezone == "Local" {
		v.Fail(platform.Path(path, "timezone"), "timezone", "must be an IANA timezone such as Europe/Madrid")
	}
	okStart := v.ClockTime(platform.Path(path, "start"), q.Start)
	okEnd := v.ClockTime(platform.Path(path, "end"), q.End)
	if okStart && okEnd && q.Start == q.End {
		v.Fail(platform.Path(path, "end"), "different", "must differ from start")
	}
}

// minutes reads "HH:MM" as minutes after midnight.
func minutes(hhmm string) (int, bool) {
	t, err := time.Parse("15:04", hhmm)
	if err != nil {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// Until reports whether now falls in the quiet hours and, if so, the
// instant they end (the next End in the timezone, daylight-saving changes
// included). Settings that do not parse quiet nothing.
func (q QuietHours) Until(now time.Time) (time.Time, bool) {
	loc, err := time.LoadLocation(q.Timezone)
	if err != nil {
		return time.Time{}, false
	}
	start, ok1 := minutes(q.Start)
	end, ok2 := minutes(q.End)
	if !ok1 || !ok2 || start == end {
		return time.Time{}, false
	}
	local := now.In(loc)
	m := local.Hour()*60 + local.Minute()
	var quiet bool
	if start < end {
		quiet = m >= start && m < end
	} else {
		quiet = m >= start || m < end
	}
	if !quiet {
		return time.Time{}, false
	}
	y, mo, d := local.Date()
	at := time.Date(y, mo, d, end/60, end%60, 0, 0, loc)
	if !at.After(now) {
		at = time.Date(y, mo, d+1, end/60, end%60, 0, 0, loc)
	}
	return at, true
}
