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

// Window is one queue's period: [From, To).
type Window struct {
	QueueID string
	From    time.Time
	To      time.Time
}

// Live is what the storage counts of a queue right now.
type Live struct {
	Waiting    int `json:"waiting"`
	Waitlisted int `json:"waitlisted"`
	Held       int `json:"held"`
	Called     int `json:"called"`
	InService  int `json:"inService"`
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
}

// Repository computes the aggregates. Implementations must aggregate in
// the storage (never load every turn): analytics run over all of an
// account's history.
type Repository interface {
	// Live returns, per queue, the turns active now and the current waits
	// at now, and the figures of today's window: Served, NoShows and
	// Service are the ones used.
	Live(ctx context.Context, today []Window, now time.Time) (map[string]Live, map[string]Stats, error)
	// Summary returns the figures of each queue's window, and of all of
	// them together (the total's percentiles are over every turn, not an
	// average of the queues').
	Summary(ctx context.Context, windows []Window) (map[string]Stats, Stats, error)
}

// Queues is what analytics needs of the queues module's storage.
type Queues interface {
	// ListQueues returns up to page.Limit+1 queues of the account after
	// page.After, by id.
	ListQueues(ctx context.Context, accountID, entityID string, page platform.PageRequest) ([]queues.Queue, error)
}

// QueueDashboard is the live figures of one queue.
type QueueDashboard struct {
	QueueID   string `json:"queueId"`
	QueueName string `json:"queueName"`
	// Timezone is the queue's (location.timezone, UTC when unset): "today"
	// is the queue's current day there.
	Timezone string `json:"timezone"`
	Today    string `json:"today"`
	Live
	ServedToday                int      `json:"servedToday"`
	NoShowsToday               int      `json:"noShowsToday"`
	AverageServiceSecondsToday *float64 `json:"averageServiceSecondsToday"`
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
	Total Stats `json:"total"`
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
		windows[i] = Window{QueueID: q.ID, From: from, To: to}
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
		}
	}
	return out, nil
}

// Validate reads the period: from and to are dates YYYY-MM-DD, from on or
// before to, at most MaxDays days from and to included. to defaults to
// today (UTC), from to DefaultDays days ending at to.
func (in SummaryInput) Validate(now time.Time) (from, to time.Time, err error) {
	var v platform.Validator
	to = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	okTo, okFrom := true, true
	if in.To != nil {
		to, okTo = v.Date("to", *in.To)
	}
	from = to.AddDate(0, 0, -(DefaultDays - 1))
	if in.From != nil {
		from, okFrom = v.Date("from", *in.From)
	}
	if okTo && okFrom {
		switch days := int(to.Sub(from).Hours()/24) + 1; {
		case days < 1:
			v.Fail("to", "after_from", "must be on or after from")
		case days > MaxDays:
			v.Fail("to", "max_range", "must be at most %d days after from (from and to included)", MaxDays-1)
		}
	}
	return from, to, v.Err()
}

// Summary returns the figures of the period per queue of the account and
// in total. The period is the local days from..to in each queue's time
// zone (location.timezone, UTC when unset), so "a day" at every branch
// means its own opening day.
func (s *Service) Summary(ctx context.Context, accountID string, in SummaryInput) (Summary, error) {
	from, to, err := in.Validate(s.clock.Now())
	if err != nil {
		return Summary{}, err
	}
	qs, err := s.accountQueues(ctx, accountID)
	if err != nil {
		return Summary{}, err
	}
	out := Summary{From: from.Format(time.DateOnly), To: to.Format(time.DateOnly),
		Days: int(to.Sub(from).Hours()/24) + 1, Queues: make([]QueueSummary, len(qs)), Total: Stats{}}
	windows := make([]Window, len(qs))
	for i, q := range qs {
		start, end := localDays(from, to, q.Zone())
		windows[i] = Window{QueueID: q.ID, From: start, To: end}
		out.Queues[i] = QueueSummary{QueueID: q.ID, QueueName: q.Name, Timezone: q.Zone().String(), PeriodStart: start, PeriodEnd: end}
	}
	if len(qs) == 0 {
		return out, nil
	}
	per, total, err := s.repo.Summary(ctx, windows)
	if err != nil {
		return Summary{}, err
	}
	for i := range out.Queues {
		out.Queues[i].Stats = per[out.Queues[i].QueueID]
	}
	out.Total = total
	return out, nil
}
