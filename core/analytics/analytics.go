// Package analytics is the read-only analytics domain (spec 4.8): a live
// dashboard per queue and a summary of a period per queue and in total.
// Every figure is an aggregate the storage computes (SQL on Postgres);
// the service only decides the periods, in each queue's time zone.
package analytics

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Bounds of a summary period.
const (
	// MaxDays is the longest period a summary covers, from and to included.
	MaxDays = 366
	// DefaultDays is the period when from is absent: to and the 29 days
	// before it.
	DefaultDays = 30
)

// Window is one queue's period: [From, To), and the queue's SLA targets
// in seconds (nil: no target), whose shares the storage counts.
type Window struct {
	QueueID           string
	From              time.Time
	To                time.Time
	MaxWaitSeconds    *float64
	MaxServiceSeconds *float64
}

// windowOf is q's window [from, to) with its SLA targets.
func windowOf(q queues.Queue, from, to time.Time) Window {
	w := Window{QueueID: q.ID, From: from, To: to}
	if m := q.SLA.MaxWaitMinutes; m != nil {
		w.MaxWaitSeconds = platform.Ptr(float64(*m) * 60)
	}
	if m := q.SLA.MaxServiceMinutes; m != nil {
		w.MaxServiceSeconds = platform.Ptr(float64(*m) * 60)
	}
	return w
}

// SLAShares are the period's turns within a queue's sla targets
// (docs/queues.md): Wait over the turns called in the period (waited at
// most sla.maxWaitMinutes from taking the turn to the call), Service over
// the turns completed in it with a service time (served within
// sla.maxServiceMinutes). Each is null when the queue has no such target;
// in the total, each sums the queues that have it. The targets in effect
// now apply to the whole period.
type SLAShares struct {
	Wait    *SLAShare `json:"wait"`
	Service *SLAShare `json:"service"`
}

// SLAShare is one target's share: Within of Measured turns met it; Share
// is Within/Measured (null when none was measured). TargetMinutes is the
// queue's target (null in the total, where queues' targets differ).
type SLAShare struct {
	TargetMinutes *int     `json:"targetMinutes"`
	Measured      int      `json:"measured"`
	Within        int      `json:"within"`
	Share         *float64 `json:"share"`
}

// finish sets Share from the counts.
func (s *SLAShare) finish(target *int) {
	if s == nil {
		return
	}
	s.TargetMinutes = target
	if s.Measured > 0 {
		s.Share = platform.Ptr(float64(s.Within) / float64(s.Measured))
	}
}

// finishSLA completes the shares the storage counted: the targets, the
// ratios; nil when neither target applied.
func finishSLA(sh *SLAShares, sla *queues.SLA) *SLAShares {
	if sh == nil || sh.Wait == nil && sh.Service == nil {
		return nil
	}
	var wait, svc *int
	if sla != nil {
		wait, svc = sla.MaxWaitMinutes, sla.MaxServiceMinutes
	}
	sh.Wait.finish(wait)
	sh.Service.finish(svc)
	return sh
}

// Live is what the storage counts of a queue right now.
type Live struct {
	Waiting    int `json:"waiting"`
	Waitlisted int `json:"waitlisted"`
	Held       int `json:"held"`
	Called     int `json:"called"`
	InService  int `json:"inService"`
	// WaitingToJoin counts the checked-in appointments of a HYBRID queue
	// whose time to join the line has come while the run is closed: they
	// join when it opens again.
	WaitingToJoin int `json:"waitingToJoin"`
	// AverageWaitSeconds and LongestWaitSeconds are over the turns waiting
	// now (WAITING and WAITLISTED), from their creation; null with none.
	AverageWaitSeconds *float64 `json:"averageWaitSeconds"`
	LongestWaitSeconds *float64 `json:"longestWaitSeconds"`
}

// Durations summarises a set of durations in seconds; the figures are
// null when Count is 0. Percentiles are continuous (interpolated), as
// PostgreSQL's percentile_cont.
type Durations struct {
	Count          int      `json:"count"`
	AverageSeconds *float64 `json:"averageSeconds"`
	P50Seconds     *float64 `json:"p50Seconds"`
	P90Seconds     *float64 `json:"p90Seconds"`
}

// Stats are the figures of a period.
type Stats struct {
	// TurnsCreated: turns taken in the period.
	TurnsCreated int `json:"turnsCreated"`
	// Served, NoShows, Cancelled: turns that finished in the period as
	// COMPLETED, NO_SHOW, CANCELLED (their status now).
	Served    int `json:"served"`
	NoShows   int `json:"noShows"`
	Cancelled int `json:"cancelled"`
	// Forwarded: turns of the queue forwarded to another in the period.
	Forwarded int `json:"forwarded"`
	// AppointmentsBooked: appointments made in the period;
	// AppointmentsCompleted: appointments completed in it.
	AppointmentsBooked    int `json:"appointmentsBooked"`
	AppointmentsCompleted int `json:"appointmentsCompleted"`
	// Wait: from taking the turn to its call, for turns called in the
	// period. Service: the service time of turns completed in the period.
	Wait    Durations `json:"wait"`
	Service Durations `json:"service"`
	// SLA is the share of these turns within the queue's sla targets;
	// null when it has none. The storage counts Measured and Within of
	// each target its window names; the service completes the rest.
	SLA *SLAShares `json:"sla"`
}

// QueueDashboard is the live figures of one queue.
type QueueDashboard struct {
	QueueID   string `json:"queueId"`
	QueueName string `json:"queueName"`
	// Timezone is the queue's zone in effect (queues.Queue.Zone): "today"
	// is the queue's current day there.
	Timezone string `json:"timezone"`
	Today    string `json:"today"`
	Live
	ServedToday                int      `json:"servedToday"`
	NoShowsToday               int      `json:"noShowsToday"`
	AverageServiceSecondsToday *float64 `json:"averageServiceSecondsToday"`
	// SLAToday is today's share of turns within the queue's sla targets
	// (null when it has none).
	SLAToday *SLAShares `json:"slaToday"`
}

// Dashboard is GET /analytics/dashboard.
type Dashboard struct {
	GeneratedAt time.Time        `json:"generatedAt"`
	Queues      []QueueDashboard `json:"queues"`
}

// QueueSummary is one queue's figures for the period: the local days from
// and to in the queue's time zone, [PeriodStart, PeriodEnd).
type QueueSummary struct {
	QueueID     string    `json:"queueId"`
	QueueName   string    `json:"queueName"`
	Timezone    string    `json:"timezone"`
	PeriodStart time.Time `json:"periodStart"`
	PeriodEnd   time.Time `json:"periodEnd"`
	Stats
}

// Summary is GET /analytics/summary.
type Summary struct {
	From   string         `json:"from"`
	To     string         `json:"to"`
	Days   int            `json:"days"`
	Queues []QueueSummary `json:"queues"`
	// Total is every queue together, each over its own local days.
	Total TotalSummary `json:"total"`
}

// TotalSummary is the figures of every queue together, and the instants
// their periods span together (from the earliest start to the latest end).
type TotalSummary struct {
	PeriodStart time.Time `json:"periodStart"`
	PeriodEnd   time.Time `json:"periodEnd"`
	Stats
}

// SummaryInput is the query of GET /analytics/summary.
type SummaryInput struct {
	From *string
	To   *string
}

// Service is the analytics use cases.
type Service struct {
	repo   Repository
	queues Queues
	clock  platform.Clock
}

// NewService builds the service.
func NewService(repo Repository, qs Queues, clock platform.Clock) *Service {
	return &Service{repo: repo, queues: qs, clock: clock}
}

// pageSize is how many queues each read of the account's queues takes.
const pageSize = 200

// accountQueues lists every queue of the account, by id.
func (s *Service) accountQueues(ctx context.Context, accountID string) ([]queues.Queue, error) {
	var out []queues.Queue
	after := ""
	for {
		page, err := s.queues.ListQueues(ctx, accountID, "", platform.PageRequest{Limit: pageSize, After: after})
		if err != nil {
			return nil, err
		}
		if len(page) > pageSize {
			page = page[:pageSize]
			out = append(out, page...)
			after = page[len(page)-1].ID
			continue
		}
		return append(out, page...), nil
	}
}

// localDay returns [start, end) of the day of date (YYYY-MM-DD) in zone.
func localDays(from, to time.Time, zone *time.Location) (time.Time, time.Time) {
	start := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, zone)
	end := time.Date(to.Year(), to.Month(), to.Day()+1, 0, 0, 0, 0, zone)
	return start.UTC(), end.UTC()
}

// Dashboard returns the live figures of every queue of the account, in
// queue id order; "today" is each queue's current day in its time zone.
func (s *Service) Dashboard(ctx context.Context, accountID string) (Dashboard, error) {
	qs, err := s.accountQueues(ctx, accountID)
	if err != nil {
		return Dashboard{}, err
	}
	now := s.clock.Now()
	windows := make([]Window, len(qs))
	for i, q := range qs {
		local := now.In(q.Zone())
		from, to := localDays(local, local, q.Zone())
		windows[i] = windowOf(q, from, to)
	}
	out := Dashboard{GeneratedAt: now, Queues: make([]QueueDashboard, len(qs))}
	if len(qs) == 0 {
		return out, nil
	}
	live, today, err := s.repo.Live(ctx, windows, now)
	if err != nil {
		return Dashboard{}, err
	}
	for i, q := range qs {
		st := today[q.ID]
		out.Queues[i] = QueueDashboard{
			QueueID: q.ID, QueueName: q.Name, Timezone: q.Zone().String(), Today: now.In(q.Zone()).Format(time.DateOnly),
			Live: live[q.ID], ServedToday: st.Served, NoShowsToday: st.NoShows, AverageServiceSecondsToday: st.Service.AverageSeconds,
			SLAToday: finishSLA(st.SLA, &q.SLA),
		}
	}
	return out, nil
}

// Period is a summary's period as asked: local dates, both included.
// Without To, the period of each queue ends on its own local today.
type Period struct {
	From, To time.Time // To is the latest local today anywhere when ToToday
	FromSet  bool
	ToToday  bool
}

// latestZone is the zone furthest ahead of UTC (Kiribati, UTC+14): no
// queue's local today is later than its date.
var latestZone = time.FixedZone("UTC+14", 14*60*60)

// Validate reads the period: from and to are dates YYYY-MM-DD, from on or
// before to, at most MaxDays days from and to included. to defaults to
// each queue's local today (so a queue east of UTC sees the day its
// dashboard calls today), from to DefaultDays days ending at to; from
// alone runs to each queue's local today.
func (in SummaryInput) Validate(now time.Time) (Period, error) {
	var v platform.Validator
	latest := now.In(latestZone)
	p := Period{To: time.Date(latest.Year(), latest.Month(), latest.Day(), 0, 0, 0, 0, time.UTC), ToToday: true}
	okTo, okFrom := true, true
	if in.To != nil {
		p.To, okTo = v.Date("to", *in.To)
		okTo = okTo && inRange(&v, "to", p.To)
		p.ToToday = false
	}
	p.From = p.To.AddDate(0, 0, -(DefaultDays - 1))
	if p.From.Before(FirstDate) {
		p.From = FirstDate // a default never reaches before the first date
	}
	if in.From != nil {
		p.From, okFrom = v.Date("from", *in.From)
		okFrom = okFrom && inRange(&v, "from", p.From)
		p.FromSet = true
	}
	if okTo && okFrom {
		switch days := daysOf(p.From, p.To); {
		case days < 1:
			v.Fail("to", "after_from", "must be on or after from (without to: each queue's local today)")
		case days > MaxDays:
			v.Fail("to", "max_range", "must be at most %d days after from (from and to included)", MaxDays-1)
		}
	}
	return p, v.Err()
}

// The dates a period may name. A local day is turned into instants in the
// queue's zone (UTC-12 to UTC+14), and the answer states them: these are
// the dates whose instants stay within the years 1-9999 in every zone,
// which JSON (RFC 3339) and PostgreSQL's timestamps both represent. A
// date outside is 400 (rule range), not a 500 at the calendar's ends.
var (
	FirstDate = time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)
	LastDate  = time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)
)

// inRange fails path when d is outside FirstDate..LastDate.
func inRange(v *platform.Validator, path string, d time.Time) bool {
	if d.Before(FirstDate) || d.After(LastDate) {
		v.Fail(path, "range", "must be a date from %s to %s", FirstDate.Format(time.DateOnly), LastDate.Format(time.DateOnly))
		return false
	}
	return true
}

// daysOf counts the dates from..to, both included.
func daysOf(from, to time.Time) int { return int(to.Sub(from).Hours()/24) + 1 }

// window is the period of one queue, as local dates: to is its own local
// today when the period has no to, and from is then DefaultDays before it
// unless given. A from after that today leaves the queue an empty period.
func (p Period) window(q queues.Queue, now time.Time) (from, to time.Time) {
	from, to = p.From, p.To
	if p.ToToday {
		local := now.In(q.Zone())
		to = time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
		if !p.FromSet {
			from = to.AddDate(0, 0, -(DefaultDays - 1))
		}
	}
	return from, to
}

// Summary returns the figures of the period per queue of the account and
// in total. The period is the local days from..to in each queue's time
// zone (location.timezone, UTC when unset), so "a day" at every branch
// means its own opening day.
func (s *Service) Summary(ctx context.Context, accountID string, in SummaryInput) (Summary, error) {
	now := s.clock.Now()
	p, err := in.Validate(now)
	if err != nil {
		return Summary{}, err
	}
	qs, err := s.accountQueues(ctx, accountID)
	if err != nil {
		return Summary{}, err
	}
	out := Summary{Queues: make([]QueueSummary, len(qs))}
	windows := make([]Window, len(qs))
	var first, last time.Time // the dates the answer covers, over every queue
	for i, q := range qs {
		from, to := p.window(q, now)
		start, end := localDays(from, to, q.Zone())
		if end.Before(start) {
			end = start // from after this queue's today: nothing to count
		}
		windows[i] = windowOf(q, start, end)
		out.Queues[i] = QueueSummary{QueueID: q.ID, QueueName: q.Name, Timezone: q.Zone().String(), PeriodStart: start, PeriodEnd: end}
		if i == 0 || from.Before(first) {
			first = from
		}
		// An empty period (from after the queue's today) adds no date.
		if !to.Before(from) && (last.IsZero() || to.After(last)) {
			last = to
		}
		if i == 0 || start.Before(out.Total.PeriodStart) {
			out.Total.PeriodStart = start
		}
		if i == 0 || end.After(out.Total.PeriodEnd) {
			out.Total.PeriodEnd = end
		}
	}
	if len(qs) == 0 {
		first, last = p.window(queues.Queue{}, now) // UTC days
		out.Total.PeriodStart, out.Total.PeriodEnd = localDays(first, last, time.UTC)
	}
	// Never backwards: when from is after the today of every queue (west
	// of UTC, from=<UTC today> alone), the answer names the day asked,
	// to = from and days 1, like a period in the future, and each queue's
	// periodStart = periodEnd says it counted nothing. days stays at least
	// 1, as the v1 document promises.
	if last.IsZero() || last.Before(first) {
		last = first
	}
	out.From, out.To, out.Days = first.Format(time.DateOnly), last.Format(time.DateOnly), daysOf(first, last)
	if len(qs) == 0 {
		return out, nil
	}
	per, total, err := s.repo.Summary(ctx, windows)
	if err != nil {
		return Summary{}, err
	}
	for i := range out.Queues {
		st := per[out.Queues[i].QueueID]
		st.SLA = finishSLA(st.SLA, &qs[i].SLA)
		out.Queues[i].Stats = st
	}
	total.SLA = finishSLA(total.SLA, nil)
	out.Total.Stats = total
	return out, nil
}
