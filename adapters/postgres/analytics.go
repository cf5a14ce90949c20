package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/qms-dev/qms/core/analytics"
)

var _ analytics.Repository = (*Analytics)(nil)

// Analytics is the Postgres analytics.Repository: a handful of aggregate
// queries, each a range scan of an index of migration 0044 per queue
// window; no turn is loaded into Go.
type Analytics struct{ db *DB }

// NewAnalytics builds the repository.
func NewAnalytics(db *DB) *Analytics { return &Analytics{db: db} }

// windowsCTE turns the windows into rows w(queue_id, lo, hi) the queries
// join on: each queue's own period, which is what lets every queue count
// its own local days in one statement.
// max_wait and max_svc are the queue's SLA targets in seconds (null: none;
// sent as text, ” for none).
const windowsCTE = `WITH w AS (
	SELECT queue_id, lo, hi, NULLIF(mw, '')::float8 AS max_wait, NULLIF(ms, '')::float8 AS max_svc
	  FROM unnest(?::text[], ?::timestamptz[], ?::timestamptz[], ?::text[], ?::text[]) AS w(queue_id, lo, hi, mw, ms)
)
`

func windowArgs(windows []analytics.Window) []any {
	ids := make([]string, len(windows))
	los := make([]string, len(windows))
	his := make([]string, len(windows))
	mws := make([]string, len(windows))
	mss := make([]string, len(windows))
	target := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	for i, w := range windows {
		ids[i] = w.QueueID
		los[i] = w.From.UTC().Format(time.RFC3339Nano)
		his[i] = w.To.UTC().Format(time.RFC3339Nano)
		mws[i], mss[i] = target(w.MaxWaitSeconds), target(w.MaxServiceSeconds)
	}
	return []any{pgdialect.Array(ids), pgdialect.Array(los), pgdialect.Array(his), pgdialect.Array(mws), pgdialect.Array(mss)}
}

// slaShare is the counted share of a target, or nil when no window of
// the group has the target.
func slaShare(has bool, n, within int) *analytics.SLAShare {
	if !has {
		return nil
	}
	return &analytics.SLAShare{Measured: n, Within: within}
}

// setSLA sets one target's share on st (wait or service), keeping the other.
func setSLA(st *analytics.Stats, wait bool, sh *analytics.SLAShare) {
	if sh == nil {
		return
	}
	if st.SLA == nil {
		st.SLA = &analytics.SLAShares{}
	}
	if wait {
		st.SLA.Wait = sh
	} else {
		st.SLA.Service = sh
	}
}

// targets tells which windows have a target: by queue, and whether any.
func targets(windows []analytics.Window, wait bool) (map[string]bool, bool) {
	by := make(map[string]bool, len(windows))
	anyOf := false
	for _, w := range windows {
		v := w.MaxServiceSeconds
		if wait {
			v = w.MaxWaitSeconds
		}
		if v != nil {
			by[w.QueueID], anyOf = true, true
		}
	}
	return by, anyOf
}

// countsRow is one window's counts.
type countsRow struct {
	QueueID               string `bun:"queue_id"`
	TurnsCreated          int    `bun:"turns_created"`
	Forwarded             int    `bun:"forwarded"`
	AppointmentsBooked    int    `bun:"appointments_booked"`
	AppointmentsCompleted int    `bun:"appointments_completed"`
}

// countsSQL: one indexed count per window and figure.
const countsSQL = windowsCTE + `SELECT w.queue_id,
	(SELECT count(*) FROM turns t
	  WHERE t.queue_id = w.queue_id AND t.created_at >= w.lo AND t.created_at < w.hi) AS turns_created,
	(SELECT count(*) FROM queue_forwards f
	  WHERE f.from_queue_id = w.queue_id AND f.status = 'FORWARDED' AND f.forwarded_at >= w.lo AND f.forwarded_at < w.hi) AS forwarded,
	(SELECT count(*) FROM appointments a
	  WHERE a.queue_id = w.queue_id AND a.created_at >= w.lo AND a.created_at < w.hi) AS appointments_booked,
	(SELECT count(*) FROM appointments a
	  WHERE a.queue_id = w.queue_id AND a.completed_at >= w.lo AND a.completed_at < w.hi) AS appointments_completed
FROM w`

// durationsCols are the aggregates of a "secs" column, for a FILTER. Both
// percentiles come from one ordered-set aggregate, so the values of a
// group are sorted once.
func durationsCols(prefix, filter string) string {
	f := ""
	if filter != "" {
		f = " FILTER (WHERE " + filter + ")"
	}
	return `count(secs)` + f + ` AS ` + prefix + `_n,
	avg(secs)` + f + ` AS ` + prefix + `_avg,
	percentile_cont(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY secs)` + f + ` AS ` + prefix + `_pct`
}

// finishedRow is one window's (or, queue_id null, the total's) turns
// finished in the period.
type finishedRow struct {
	QueueID   *string   `bun:"queue_id"`
	Served    int       `bun:"served"`
	NoShows   int       `bun:"no_shows"`
	Cancelled int       `bun:"cancelled"`
	SvcN      int       `bun:"svc_n"`
	SvcAvg    *float64  `bun:"svc_avg"`
	SvcPct    []float64 `bun:"svc_pct,array"`
	SLAN      int       `bun:"sla_n"`
	SLAWithin int       `bun:"sla_within"`
}

// finishedSQL: turns finished in each window, per queue and in total
// (GROUPING SETS), with the service-time distribution of the completed.
var finishedSQL = windowsCTE + `SELECT t.queue_id,
	count(*) FILTER (WHERE t.status = 'COMPLETED') AS served,
	count(*) FILTER (WHERE t.status = 'NO_SHOW') AS no_shows,
	count(*) FILTER (WHERE t.status = 'CANCELLED') AS cancelled,
	` + durationsCols("svc", "t.status = 'COMPLETED'") + `,
	count(secs) FILTER (WHERE t.status = 'COMPLETED' AND t.lim IS NOT NULL) AS sla_n,
	count(secs) FILTER (WHERE t.status = 'COMPLETED' AND secs <= t.lim) AS sla_within
FROM w JOIN LATERAL (
	SELECT t.queue_id, t.status, t.service_seconds AS secs, w.max_svc AS lim FROM turns t
	 WHERE t.queue_id = w.queue_id AND t.finished_at >= w.lo AND t.finished_at < w.hi
) t ON true
GROUP BY GROUPING SETS ((t.queue_id), ())`

// waitRow is one window's (or the total's) waits of the turns called in
// the period.
type waitRow struct {
	QueueID   *string   `bun:"queue_id"`
	WaitN     int       `bun:"wait_n"`
	WaitAvg   *float64  `bun:"wait_avg"`
	WaitPct   []float64 `bun:"wait_pct,array"`
	SLAN      int       `bun:"sla_n"`
	SLAWithin int       `bun:"sla_within"`
}

var waitSQL = windowsCTE + `SELECT t.queue_id,
	` + durationsCols("wait", "") + `,
	count(secs) FILTER (WHERE t.lim IS NOT NULL) AS sla_n,
	count(secs) FILTER (WHERE secs <= t.lim) AS sla_within
FROM w JOIN LATERAL (
	SELECT t.queue_id, extract(epoch FROM t.called_at - t.created_at)::float8 AS secs, w.max_wait AS lim FROM turns t
	 WHERE t.queue_id = w.queue_id AND t.called_at >= w.lo AND t.called_at < w.hi
) t ON true
GROUP BY GROUPING SETS ((t.queue_id), ())`

// durationsOf builds the durations of a group from its count, mean and
// percentiles [p50, p90].
func durationsOf(n int, avg *float64, pct []float64) analytics.Durations {
	if n == 0 || len(pct) != 2 {
		return analytics.Durations{}
	}
	return analytics.Durations{Count: n, AverageSeconds: avg, P50Seconds: &pct[0], P90Seconds: &pct[1]}
}

// finished runs finishedSQL into per (by queue) and total.
func (r *Analytics) finished(ctx context.Context, windows []analytics.Window, per map[string]analytics.Stats, total *analytics.Stats) error {
	var rows []finishedRow
	if err := r.db.IDB(ctx).NewRaw(finishedSQL, windowArgs(windows)...).Scan(ctx, &rows); err != nil {
		return wrap(err, "analytics: finished turns")
	}
	fill := func(st *analytics.Stats, row finishedRow) {
		st.Served, st.NoShows, st.Cancelled = row.Served, row.NoShows, row.Cancelled
		st.Service = durationsOf(row.SvcN, row.SvcAvg, row.SvcPct)
	}
	has, hasAny := targets(windows, false)
	for _, row := range rows {
		if row.QueueID == nil {
			fill(total, row)
			setSLA(total, false, slaShare(hasAny, row.SLAN, row.SLAWithin))
			continue
		}
		st := per[*row.QueueID]
		fill(&st, row)
		setSLA(&st, false, slaShare(has[*row.QueueID], row.SLAN, row.SLAWithin))
		per[*row.QueueID] = st
	}
	// A target with no finished turn (no row) still shows, as 0 of 0.
	for id := range has {
		st := per[id]
		if st.SLA == nil || st.SLA.Service == nil {
			setSLA(&st, false, slaShare(true, 0, 0))
			per[id] = st
		}
	}
	if hasAny && (total.SLA == nil || total.SLA.Service == nil) {
		setSLA(total, false, slaShare(true, 0, 0))
	}
	return nil
}

// waits runs waitSQL into per (by queue) and total.
func (r *Analytics) waits(ctx context.Context, windows []analytics.Window, per map[string]analytics.Stats, total *analytics.Stats) error {
	var rows []waitRow
	if err := r.db.IDB(ctx).NewRaw(waitSQL, windowArgs(windows)...).Scan(ctx, &rows); err != nil {
		return wrap(err, "analytics: waits")
	}
	has, hasAny := targets(windows, true)
	for _, row := range rows {
		d := durationsOf(row.WaitN, row.WaitAvg, row.WaitPct)
		if row.QueueID == nil {
			total.Wait = d
			setSLA(total, true, slaShare(hasAny, row.SLAN, row.SLAWithin))
			continue
		}
		st := per[*row.QueueID]
		st.Wait = d
		setSLA(&st, true, slaShare(has[*row.QueueID], row.SLAN, row.SLAWithin))
		per[*row.QueueID] = st
	}
	for id := range has {
		st := per[id]
		if st.SLA == nil || st.SLA.Wait == nil {
			setSLA(&st, true, slaShare(true, 0, 0))
			per[id] = st
		}
	}
	if hasAny && (total.SLA == nil || total.SLA.Wait == nil) {
		setSLA(total, true, slaShare(true, 0, 0))
	}
	return nil
}

// Summary computes the figures of each window and the total in three
// statements.
func (r *Analytics) Summary(ctx context.Context, windows []analytics.Window) (map[string]analytics.Stats, analytics.Stats, error) {
	per := make(map[string]analytics.Stats, len(windows))
	var total analytics.Stats
	var counts []countsRow
	if err := r.db.IDB(ctx).NewRaw(countsSQL, windowArgs(windows)...).Scan(ctx, &counts); err != nil {
		return nil, total, wrap(err, "analytics: counts")
	}
	for _, c := range counts {
		st := per[c.QueueID]
		st.TurnsCreated, st.Forwarded = c.TurnsCreated, c.Forwarded
		st.AppointmentsBooked, st.AppointmentsCompleted = c.AppointmentsBooked, c.AppointmentsCompleted
		per[c.QueueID] = st
		total.TurnsCreated += c.TurnsCreated
		total.Forwarded += c.Forwarded
		total.AppointmentsBooked += c.AppointmentsBooked
		total.AppointmentsCompleted += c.AppointmentsCompleted
	}
	if err := r.finished(ctx, windows, per, &total); err != nil {
		return nil, total, err
	}
	if err := r.waits(ctx, windows, per, &total); err != nil {
		return nil, total, err
	}
	return per, total, nil
}

// liveRow is one queue's active turns.
type liveRow struct {
	QueueID    string   `bun:"queue_id"`
	Waiting    int      `bun:"waiting"`
	Waitlisted int      `bun:"waitlisted"`
	Held       int      `bun:"held"`
	Called     int      `bun:"called"`
	InService  int      `bun:"in_service"`
	AvgWait    *float64 `bun:"avg_wait"`
	MaxWait    *float64 `bun:"max_wait"`
}

// liveSQL reads only the active turns, through the partial index on
// (queue_id, status, created_at): an index-only scan however long the
// history.
const liveSQL = `SELECT t.queue_id,
	count(*) FILTER (WHERE t.status = 'WAITING') AS waiting,
	count(*) FILTER (WHERE t.status = 'WAITLISTED') AS waitlisted,
	count(*) FILTER (WHERE t.status = 'HELD') AS held,
	count(*) FILTER (WHERE t.status = 'CALLED') AS called,
	count(*) FILTER (WHERE t.status = 'IN_SERVICE') AS in_service,
	avg(extract(epoch FROM ?::timestamptz - t.created_at)::float8) FILTER (WHERE t.status IN ('WAITING', 'WAITLISTED')) AS avg_wait,
	max(extract(epoch FROM ?::timestamptz - t.created_at)::float8) FILTER (WHERE t.status IN ('WAITING', 'WAITLISTED')) AS max_wait
FROM turns t
WHERE t.queue_id = ANY(?::text[]) AND t.status IN ('WAITLISTED', 'WAITING', 'HELD', 'CALLED', 'IN_SERVICE')
GROUP BY t.queue_id`

// Live counts each queue's active turns and current waits, and today's
// finished turns.
func (r *Analytics) Live(ctx context.Context, today []analytics.Window, now time.Time) (map[string]analytics.Live, map[string]analytics.Stats, error) {
	ids := make([]string, len(today))
	for i, w := range today {
		ids[i] = w.QueueID
	}
	at := now.UTC().Format(time.RFC3339Nano)
	var rows []liveRow
	if err := r.db.IDB(ctx).NewRaw(liveSQL, at, at, pgdialect.Array(ids)).Scan(ctx, &rows); err != nil {
		return nil, nil, wrap(err, "analytics: live")
	}
	live := make(map[string]analytics.Live, len(today))
	for _, row := range rows {
		live[row.QueueID] = analytics.Live{Waiting: row.Waiting, Waitlisted: row.Waitlisted, Held: row.Held, Called: row.Called,
			InService: row.InService, AverageWaitSeconds: row.AvgWait, LongestWaitSeconds: row.MaxWait}
	}
	// Appointments waiting to join a closed run's line: the partial index
	// on joins_line_at holds only the few checked in and not in line.
	var joining []struct {
		QueueID string `bun:"queue_id"`
		N       int    `bun:"n"`
	}
	if err := r.db.IDB(ctx).NewRaw(`SELECT queue_id, count(*) AS n FROM appointments
		WHERE joins_line_at IS NOT NULL AND joins_line_at <= ? AND queue_id = ANY(?::text[]) GROUP BY queue_id`,
		at, pgdialect.Array(ids)).Scan(ctx, &joining); err != nil {
		return nil, nil, wrap(err, "analytics: appointments waiting to join")
	}
	for _, j := range joining {
		l := live[j.QueueID]
		l.WaitingToJoin = j.N
		live[j.QueueID] = l
	}
	per := make(map[string]analytics.Stats, len(today))
	var total analytics.Stats
	if err := r.finished(ctx, today, per, &total); err != nil {
		return nil, nil, err
	}
	// Today's wait share, only where a queue has the target: the
	// dashboard shows no other wait figure of today.
	if _, anyWait := targets(today, true); anyWait {
		if err := r.waits(ctx, today, per, &total); err != nil {
			return nil, nil, err
		}
	}
	return live, per, nil
}
