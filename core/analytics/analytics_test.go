package analytics_test

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/analytics"
	"github.com/qms-dev/qms/core/location"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
)

func TestPeriodValidation(t *testing.T) {
	now := time.Date(2026, 3, 15, 23, 30, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	cases := []struct {
		name     string
		in       analytics.SummaryInput
		from, to string
		path     string
		rule     string
	}{
		// 23:30 UTC is already March 16 east of UTC: without to, the
		// period reaches the latest local today anywhere (each queue then
		// stops at its own).
		{name: "defaults: the 30 days to today", from: "2026-02-15", to: "2026-03-16"},
		{name: "to alone", in: analytics.SummaryInput{To: str("2026-01-31")}, from: "2026-01-02", to: "2026-01-31"},
		{name: "from alone", in: analytics.SummaryInput{From: str("2026-03-01")}, from: "2026-03-01", to: "2026-03-16"},
		{name: "from alone, the local today east of UTC", in: analytics.SummaryInput{From: str("2026-03-16")}, from: "2026-03-16", to: "2026-03-16"},
		{name: "one day", in: analytics.SummaryInput{From: str("2026-03-01"), To: str("2026-03-01")}, from: "2026-03-01", to: "2026-03-01"},
		{name: "366 days", in: analytics.SummaryInput{From: str("2024-01-01"), To: str("2024-12-31")}, from: "2024-01-01", to: "2024-12-31"},
		{name: "367 days", in: analytics.SummaryInput{From: str("2024-01-01"), To: str("2025-01-01")}, path: "to", rule: "max_range"},
		{name: "from after to", in: analytics.SummaryInput{From: str("2026-03-02"), To: str("2026-03-01")}, path: "to", rule: "after_from"},
		{name: "from after today, no to", in: analytics.SummaryInput{From: str("2026-04-01")}, path: "to", rule: "after_from"},
		{name: "not a date", in: analytics.SummaryInput{From: str("2026-3-1")}, path: "from", rule: "date"},
		{name: "no such day", in: analytics.SummaryInput{To: str("2026-02-30")}, path: "to", rule: "date"},
		{name: "empty", in: analytics.SummaryInput{From: str("")}, path: "from", rule: "date"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.in.Validate(now)
			from, to := p.From, p.To
			if c.path == "" {
				if err != nil || from.Format(time.DateOnly) != c.from || to.Format(time.DateOnly) != c.to {
					t.Fatalf("got %s..%s, %v; want %s..%s", from.Format(time.DateOnly), to.Format(time.DateOnly), err, c.from, c.to)
				}
				return
			}
			e, ok := platform.AsError(err)
			if !ok || e.Code != platform.CodeValidation {
				t.Fatalf("want VALIDATION_ERROR, got %v", err)
			}
			f := platform.FieldErrors(e)
			if len(f) != 1 || f[0].Path != c.path || f[0].Rule != c.rule {
				t.Fatalf("want %s %s, got %+v", c.path, c.rule, f)
			}
		})
	}
}

// recorder is an analytics.Repository that keeps the windows it is asked
// about.
type recorder struct {
	windows []analytics.Window
	now     time.Time
}

func (r *recorder) Live(_ context.Context, w []analytics.Window, now time.Time) (map[string]analytics.Live, map[string]analytics.Stats, error) {
	r.windows, r.now = w, now
	return map[string]analytics.Live{w[0].QueueID: {Waiting: 4}}, map[string]analytics.Stats{w[0].QueueID: {Served: 2}}, nil
}

func (r *recorder) Summary(_ context.Context, w []analytics.Window) (map[string]analytics.Stats, analytics.Stats, error) {
	r.windows = w
	return map[string]analytics.Stats{w[1].QueueID: {TurnsCreated: 3}}, analytics.Stats{TurnsCreated: 3}, nil
}

// queueList is an analytics.Queues over a fixed list, paged like the
// repositories.
type queueList []queues.Queue

func (l queueList) ListQueues(_ context.Context, accountID, _ string, page platform.PageRequest) ([]queues.Queue, error) {
	var out []queues.Queue
	for _, q := range l {
		if q.AccountID == accountID && q.ID > page.After && len(out) < page.Limit+1 {
			out = append(out, q)
		}
	}
	return out, nil
}

func zoned(id, tz string) queues.Queue {
	q := queues.Queue{ID: id, AccountID: "acc_1", Name: "Q " + id}
	if tz != "" {
		q.Location = &location.Location{Timezone: &tz}
	}
	return q
}

func TestPeriodsAreEachQueuesLocalDays(t *testing.T) {
	rec := &recorder{}
	// 2026-03-29 00:30 UTC: still the 28th in New York, the 29th in
	// Madrid, where clocks go forward at 02:00 that day (a 23-hour day).
	clock := platformtest.NewClock(time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC))
	qs := queueList{zoned("que_a", "America/New_York"), zoned("que_b", "Europe/Madrid"), zoned("que_c", ""), zoned("que_x", "")}
	qs[3].AccountID = "acc_2"
	svc := analytics.NewService(rec, qs, clock)

	d, err := svc.Dashboard(context.Background(), "acc_1")
	if err != nil {
		t.Fatal(err)
	}
	want := []analytics.Window{
		{QueueID: "que_a", From: time.Date(2026, 3, 28, 4, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 29, 4, 0, 0, 0, time.UTC)},
		{QueueID: "que_b", From: time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 29, 22, 0, 0, 0, time.UTC)},
		{QueueID: "que_c", From: time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)},
	}
	if len(rec.windows) != 3 {
		t.Fatalf("windows: %+v", rec.windows)
	}
	for i, w := range want {
		if got := rec.windows[i]; got.QueueID != w.QueueID || !got.From.Equal(w.From) || !got.To.Equal(w.To) {
			t.Errorf("today of %s: got %v..%v, want %v..%v", w.QueueID, got.From, got.To, w.From, w.To)
		}
	}
	if d.Queues[0].Today != "2026-03-28" || d.Queues[1].Today != "2026-03-29" || d.Queues[0].Waiting != 4 || d.Queues[0].ServedToday != 2 ||
		d.Queues[1].Timezone != "Europe/Madrid" || d.Queues[2].Timezone != "UTC" {
		t.Fatalf("dashboard: %+v", d.Queues)
	}

	str := func(s string) *string { return &s }
	s, err := svc.Summary(context.Background(), "acc_1", analytics.SummaryInput{From: str("2026-03-28"), To: str("2026-03-29")})
	if err != nil {
		t.Fatal(err)
	}
	if s.Days != 2 || s.Queues[1].TurnsCreated != 3 || s.Total.TurnsCreated != 3 || !s.Total.PeriodStart.Equal(s.Queues[1].PeriodStart) ||
		!s.Queues[1].PeriodStart.Equal(time.Date(2026, 3, 27, 23, 0, 0, 0, time.UTC)) ||
		!s.Queues[1].PeriodEnd.Equal(time.Date(2026, 3, 29, 22, 0, 0, 0, time.UTC)) {
		t.Fatalf("summary: %+v", s)
	}

	// An account without queues gets empty lists, not nulls.
	empty, err := svc.Summary(context.Background(), "acc_3", analytics.SummaryInput{})
	if err != nil || empty.Queues == nil || len(empty.Queues) != 0 {
		t.Fatalf("no queues: %+v %v", empty, err)
	}
}

func TestManyQueuesArePaged(t *testing.T) {
	var qs queueList
	for i := range 450 {
		qs = append(qs, zoned("que_"+string(rune('a'+i/26/26%26))+string(rune('a'+i/26%26))+string(rune('a'+i%26)), ""))
	}
	rec := &recorder{}
	svc := analytics.NewService(rec, qs, platformtest.NewClock(time.Now()))
	if _, err := svc.Summary(context.Background(), "acc_1", analytics.SummaryInput{}); err != nil {
		t.Fatal(err)
	}
	if len(rec.windows) != 450 {
		t.Fatalf("windows for 450 queues: %d", len(rec.windows))
	}
}

// TestSummaryEndsOnEachQueuesLocalToday: without to, each queue's period
// ends on its own local today, and from alone may name the day a queue east
// of UTC calls today; the total states the instants it spans.
func TestSummaryEndsOnEachQueuesLocalToday(t *testing.T) {
	qs := queueList{zoned("que_a", "Asia/Tokyo"), zoned("que_b", "America/Lima")}
	rec := &recorder{}
	now := time.Date(2026, 3, 15, 23, 30, 0, 0, time.UTC) // March 16 in Tokyo, March 15 in Lima
	svc := analytics.NewService(rec, qs, platformtest.NewClock(now))
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	lima, _ := time.LoadLocation("America/Lima")
	s, err := svc.Summary(context.Background(), "acc_1", analytics.SummaryInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Queues[0].PeriodEnd.Equal(time.Date(2026, 3, 17, 0, 0, 0, 0, tokyo)) ||
		!s.Queues[1].PeriodEnd.Equal(time.Date(2026, 3, 16, 0, 0, 0, 0, lima)) {
		t.Fatalf("each period ends with its queue's local today: %v %v", s.Queues[0].PeriodEnd, s.Queues[1].PeriodEnd)
	}
	if s.To != "2026-03-16" || !s.Total.PeriodStart.Equal(s.Queues[1].PeriodStart) || !s.Total.PeriodEnd.Equal(s.Queues[0].PeriodEnd) {
		t.Fatalf("total period: %s %v..%v", s.To, s.Total.PeriodStart, s.Total.PeriodEnd)
	}
	str := func(s string) *string { return &s }
	s, err = svc.Summary(context.Background(), "acc_1", analytics.SummaryInput{From: str("2026-03-16")})
	if err != nil {
		t.Fatalf("from = Tokyo's today alone: %v", err)
	}
	if d := s.Queues[0].PeriodEnd.Sub(s.Queues[0].PeriodStart); d != 24*time.Hour {
		t.Fatalf("Tokyo: one day, got %v", d)
	}
	if !s.Queues[1].PeriodEnd.Equal(s.Queues[1].PeriodStart) {
		t.Fatalf("Lima has not reached March 16: an empty period, got %v..%v", s.Queues[1].PeriodStart, s.Queues[1].PeriodEnd)
	}
}
