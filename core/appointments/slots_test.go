package appointments

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	z, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return z
}

func gen(date, start, end string, minutes, capacity int) GenerateInput {
	return GenerateInput{Date: &date, StartTime: &start, EndTime: &end, SlotMinutes: &minutes, Capacity: &capacity}
}

func TestLocalInstantResolvesGapsForwardAndRepeatsToTheFirst(t *testing.T) {
	ny, berlin, lordHowe := zone(t, "America/New_York"), zone(t, "Europe/Berlin"), zone(t, "Australia/Lord_Howe")
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	cases := []struct {
		name    string
		zone    *time.Location
		day     string
		minutes int
		want    string // UTC
	}{
		{"ordinary reading", ny, "2026-03-07", 9 * 60, "2026-03-07T14:00:00Z"},
		{"New York skips 02:30: moved to 03:30 EDT", ny, "2026-03-08", 2*60 + 30, "2026-03-08T07:30:00Z"},
		{"New York 03:00 EDT after the jump", ny, "2026-03-08", 3 * 60, "2026-03-08T07:00:00Z"},
		{"New York shows 01:30 twice: first, EDT", ny, "2026-11-01", 60 + 30, "2026-11-01T05:30:00Z"},
		{"Berlin shows 02:30 twice: first, CEST", berlin, "2026-10-25", 2*60 + 30, "2026-10-25T00:30:00Z"},
		{"Berlin skips 02:30: moved to 03:30 CEST", berlin, "2026-03-29", 2*60 + 30, "2026-03-29T01:30:00Z"},
		{"Lord Howe skips half an hour: 02:15 is 02:45", lordHowe, "2026-10-04", 2*60 + 15, "2026-10-03T15:45:00Z"},
		{"midnight in UTC", time.UTC, "2026-03-08", 0, "2026-03-08T00:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := localInstant(day(c.day), c.minutes, c.zone).UTC().Format(time.RFC3339)
			if got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

func starts(ws []Window, z *time.Location) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Start.In(z).Format("15:04 MST")
	}
	return out
}

func TestPlanDayStepsRealTimeAcrossDaylightSavingChanges(t *testing.T) {
	ny := zone(t, "America/New_York")
	cases := []struct {
		name string
		in   GenerateInput
		want []string
	}{
		{"an ordinary day", gen("2026-03-07", "00:00", "05:00", 60, 1),
			[]string{"00:00 EST", "01:00 EST", "02:00 EST", "03:00 EST", "04:00 EST"}},
		{"spring forward: the hour that does not exist has no slot", gen("2026-03-08", "00:00", "05:00", 60, 1),
			[]string{"00:00 EST", "01:00 EST", "03:00 EDT", "04:00 EDT"}},
		{"spring forward, half hours", gen("2026-03-08", "01:00", "04:00", 30, 1),
			[]string{"01:00 EST", "01:30 EST", "03:00 EDT", "03:30 EDT"}},
		{"fall back: the repeated hour has slots twice", gen("2026-11-01", "00:00", "05:00", 60, 1),
			[]string{"00:00 EDT", "01:00 EDT", "01:00 EST", "02:00 EST", "03:00 EST", "04:00 EST"}},
		{"a last step past endTime is not made", gen("2026-03-07", "09:00", "10:00", 25, 1),
			[]string{"09:00 EST", "09:25 EST"}},
		{"a window the jump swallows is empty", gen("2026-03-08", "02:00", "03:00", 30, 1), []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := PlanDay(c.in, ny)
			got := starts(ws, ny)
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
				if d := ws[i].End.Sub(ws[i].Start); d != time.Duration(*c.in.SlotMinutes)*time.Minute {
					t.Fatalf("slot %d lasts %v", i, d)
				}
			}
		})
	}
}

func TestGenerateInputChecksEveryBound(t *testing.T) {
	rules := func(err error) map[string]string {
		out := map[string]string{}
		if e, ok := platform.AsError(err); ok {
			for _, f := range platform.FieldErrors(e) {
				out[f.Path] = f.Rule
			}
		}
		return out
	}
	cases := []struct {
		name string
		in   GenerateInput
		want map[string]string
	}{
		{"everything missing", GenerateInput{}, map[string]string{
			"date": "required", "startTime": "required", "endTime": "required", "slotMinutes": "required", "capacity": "required"}},
		{"shapes", gen("2026-2-30", "9:00", "24:00", 30, 5), map[string]string{
			"date": "date", "startTime": "time_hhmm", "endTime": "time_hhmm"}},
		{"not a real date", gen("2026-02-30", "09:00", "10:00", 30, 5), map[string]string{"date": "date"}},
		{"ranges low", gen("2026-03-07", "09:00", "10:00", 0, 0), map[string]string{"slotMinutes": "min", "capacity": "min"}},
		{"ranges high", gen("2026-03-07", "00:00", "23:59", 481, 1001), map[string]string{"slotMinutes": "max", "capacity": "max"}},
		{"end equal to start", gen("2026-03-07", "09:00", "09:00", 30, 5), map[string]string{"endTime": "after_start"}},
		{"end before start", gen("2026-03-07", "10:00", "09:00", 30, 5), map[string]string{"endTime": "after_start"}},
		{"window shorter than a slot", gen("2026-03-07", "09:00", "09:20", 30, 5), map[string]string{"slotMinutes": "window"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := rules(c.in.Validate())
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for p, r := range c.want {
				if got[p] != r {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
	for _, ok := range []GenerateInput{gen("2026-03-07", "00:00", "23:59", 480, 1000), gen("2026-03-07", "09:00", "09:01", 1, 1)} {
		if err := ok.Validate(); err != nil {
			t.Fatalf("bounds refused: %v", err)
		}
	}
}

func TestSortKeysOrderByTimeThenID(t *testing.T) {
	t0 := time.Date(2026, 3, 7, 9, 0, 0, 0, time.UTC)
	a, b, c := SortKey(t0, "slot_b"), SortKey(t0.Add(time.Minute), "slot_a"), SortKey(t0, "slot_c")
	if !(a < c && c < b) {
		t.Fatalf("keys out of order: %s %s %s", a, c, b)
	}
	start, id, ok := ParseSortKey(b)
	if !ok || !start.Equal(t0.Add(time.Minute)) || id != "slot_a" {
		t.Fatalf("parse %s: %v %s %v", b, start, id, ok)
	}
	for _, bad := range []string{"", "x|y", "00000000000000000001|", "slot_a"} {
		if _, _, ok := ParseSortKey(bad); ok {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestTheStateMachineIsTheDocumentedTable(t *testing.T) {
	// The table of docs/appointments.md, row by row: from -> action -> to
	// ("" is INVALID_TRANSITION).
	table := map[Status]map[Action]Status{
		StatusScheduled: {ActionCancel: StatusCancelled, ActionCheckIn: StatusCheckedIn, ActionStart: StatusInService, ActionComplete: "", ActionNoShow: StatusNoShow},
		StatusCheckedIn: {ActionCancel: StatusCancelled, ActionCheckIn: "", ActionStart: StatusInService, ActionComplete: "", ActionNoShow: StatusNoShow},
		StatusInService: {ActionCancel: "", ActionCheckIn: "", ActionStart: "", ActionComplete: StatusCompleted, ActionNoShow: ""},
		StatusCompleted: {ActionCancel: "", ActionCheckIn: "", ActionStart: "", ActionComplete: "", ActionNoShow: ""},
		StatusCancelled: {ActionCancel: "", ActionCheckIn: "", ActionStart: "", ActionComplete: "", ActionNoShow: ""},
		StatusNoShow:    {ActionCancel: "", ActionCheckIn: "", ActionStart: "", ActionComplete: "", ActionNoShow: ""},
	}
	if len(table) != len(Statuses) {
		t.Fatalf("the table covers %d statuses of %d", len(table), len(Statuses))
	}
	for from, row := range table {
		for action, want := range row {
			got, err := from.Next(action)
			if want == "" {
				e, ok := platform.AsError(err)
				if !ok || e.Code != CodeInvalidTransition || e.Details["status"] != string(from) || e.Kind != platform.KindConflict {
					t.Errorf("%s --%s-->: want INVALID_TRANSITION naming %s, got %v", from, action, from, err)
				}
				continue
			}
			if err != nil || got != want {
				t.Errorf("%s --%s--> %s, want %s (%v)", from, action, got, want, err)
			}
		}
		if from.Final() != (from == StatusCompleted || from == StatusCancelled || from == StatusNoShow) {
			t.Errorf("%s: Final is %v", from, from.Final())
		}
	}
}
