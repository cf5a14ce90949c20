package memory

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/qms-dev/qms/core/analytics"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/workflow"
)

// Analytics is the memory analytics.Repository. It reads the turns,
// appointments and forwards of the same store under one read lock, through
// narrow accessors of the repositories that own those tables (the turns of
// a queue through their byQueue index; appointments and forwards, which
// have no queue index, by a scan): it knows none of their layouts. In
// memory mode every row is in memory anyway, so this is the counterpart of
// the Postgres aggregates.
type Analytics struct {
	s     *Store
	turns *Turns
	appts *Appointments
	wf    *Workflow
}

// NewAnalytics builds the repository over the memory repositories of the
// same store; it refuses others (a wiring mistake).
func NewAnalytics(s *Store, tr turns.Repository, ar appointments.Repository, wr workflow.Repository) (*Analytics, error) {
	t, ok1 := tr.(*Turns)
	a, ok2 := ar.(*Appointments)
	w, ok3 := wr.(*Workflow)
	if !ok1 || !ok2 || !ok3 || t.s != s || a.s != s || w.s != s {
		return nil, fmt.Errorf("memory: analytics needs the memory turns, appointments and workflow repositories of its store")
	}
	return &Analytics{s: s, turns: t, appts: a, wf: w}, nil
}

func within(t *time.Time, w analytics.Window) bool {
	return t != nil && !t.Before(w.From) && t.Before(w.To)
}

// durations summarises values as analytics.Durations, with percentiles
// interpolated as PostgreSQL's percentile_cont.
func durations(vs []float64) analytics.Durations {
	d := analytics.Durations{Count: len(vs)}
	if len(vs) == 0 {
		return d
	}
	slices.Sort(vs)
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	avg := sum / float64(len(vs))
	pct := func(p float64) *float64 {
		pos := p * float64(len(vs)-1)
		lo, hi := math.Floor(pos), math.Ceil(pos)
		v := vs[int(lo)] + (vs[int(hi)]-vs[int(lo)])*(pos-lo)
		return &v
	}
	d.AverageSeconds, d.P50Seconds, d.P90Seconds = &avg, pct(0.5), pct(0.9)
	return d
}

// acc accumulates one queue's (or the total's) figures; slaWait and
// slaService are non-nil once a window with that target counts into it.
type acc struct {
	stats               analytics.Stats
	waits, served       []float64
	slaWait, slaService *analytics.SLAShare
}

func (a *acc) done() analytics.Stats {
	a.stats.Wait, a.stats.Service = durations(a.waits), durations(a.served)
	if a.slaWait != nil || a.slaService != nil {
		a.stats.SLA = &analytics.SLAShares{Wait: a.slaWait, Service: a.slaService}
	}
	return a.stats
}

// slaCount counts one duration against a target: measured, and within
// when at most the target.
func slaCount(share **analytics.SLAShare, secs, target float64) {
	if *share == nil {
		*share = &analytics.SLAShare{}
	}
	(*share).Measured++
	if secs <= target {
		(*share).Within++
	}
}

// Summary computes each window's figures and the total.
func (r *Analytics) Summary(ctx context.Context, windows []analytics.Window) (map[string]analytics.Stats, analytics.Stats, error) {
	byQueue := make(map[string]analytics.Window, len(windows))
	for _, w := range windows {
		byQueue[w.QueueID] = w
	}
	per := make(map[string]*acc, len(windows))
	for _, w := range windows {
		per[w.QueueID] = &acc{}
	}
	total := &acc{}
	both := func(queueID string, f func(a *acc)) {
		f(per[queueID])
		f(total)
	}
	// A target with nothing measured still shows, as 0 of 0.
	for _, w := range windows {
		if w.MaxWaitSeconds != nil {
			both(w.QueueID, func(a *acc) {
				if a.slaWait == nil {
					a.slaWait = &analytics.SLAShare{}
				}
			})
		}
		if w.MaxServiceSeconds != nil {
			both(w.QueueID, func(a *acc) {
				if a.slaService == nil {
					a.slaService = &analytics.SLAShare{}
				}
			})
		}
	}
	r.s.read(ctx, func() {
		for queueID, w := range byQueue {
			r.turns.ofQueue(queueID, func(t turns.Turn) {
				if within(&t.CreatedAt, w) {
					both(queueID, func(a *acc) { a.stats.TurnsCreated++ })
				}
				if within(t.CalledAt, w) {
					wait := t.CalledAt.Sub(t.CreatedAt).Seconds()
					both(queueID, func(a *acc) {
						a.waits = append(a.waits, wait)
						if w.MaxWaitSeconds != nil {
							slaCount(&a.slaWait, wait, *w.MaxWaitSeconds)
						}
					})
				}
				if within(t.FinishedAt, w) {
					switch t.Status {
					case turns.Completed:
						both(queueID, func(a *acc) {
							a.stats.Served++
							if t.ServiceSeconds != nil {
								a.served = append(a.served, *t.ServiceSeconds)
								if w.MaxServiceSeconds != nil {
									slaCount(&a.slaService, *t.ServiceSeconds, *w.MaxServiceSeconds)
								}
							}
						})
					case turns.NoShow:
						both(queueID, func(a *acc) { a.stats.NoShows++ })
					case turns.Cancelled:
						both(queueID, func(a *acc) { a.stats.Cancelled++ })
					}
				}
			})
		}
		r.appts.eachAppointment(func(ap appointments.Appointment) {
			w, ok := byQueue[ap.QueueID]
			if !ok {
				return
			}
			if within(&ap.CreatedAt, w) {
				both(ap.QueueID, func(a *acc) { a.stats.AppointmentsBooked++ })
			}
			if within(ap.CompletedAt, w) {
				both(ap.QueueID, func(a *acc) { a.stats.AppointmentsCompleted++ })
			}
		})
		r.wf.eachForward(func(f workflow.Forward) {
			if w, ok := byQueue[f.FromQueueID]; ok && f.Status == workflow.ForwardDone && within(f.ForwardedAt, w) {
				both(f.FromQueueID, func(a *acc) { a.stats.Forwarded++ })
			}
		})
	})
	out := make(map[string]analytics.Stats, len(per))
	for id, a := range per {
		out[id] = a.done()
	}
	return out, total.done(), nil
}

// Live counts the active turns and current waits of each queue, and
// today's figures.
func (r *Analytics) Live(ctx context.Context, today []analytics.Window, now time.Time) (map[string]analytics.Live, map[string]analytics.Stats, error) {
	live := make(map[string]analytics.Live, len(today))
	waits := make(map[string][]float64, len(today))
	for _, w := range today {
		live[w.QueueID] = analytics.Live{}
	}
	r.s.read(ctx, func() {
		for queueID := range live {
			r.turns.ofQueue(queueID, func(t turns.Turn) {
				live[queueID] = count(live[queueID], t)
				if t.Status == turns.Waiting || t.Status == turns.Waitlisted {
					waits[queueID] = append(waits[queueID], now.Sub(t.CreatedAt).Seconds())
				}
			})
		}
		r.appts.eachAppointment(func(ap appointments.Appointment) {
			if l, ok := live[ap.QueueID]; ok && ap.JoinsLineAt != nil && !ap.JoinsLineAt.After(now) {
				l.WaitingToJoin++
				live[ap.QueueID] = l
			}
		})
	})
	for id, ws := range waits {
		l := live[id]
		d := durations(ws)
		longest := ws[len(ws)-1] // sorted by durations
		l.AverageWaitSeconds, l.LongestWaitSeconds = d.AverageSeconds, &longest
		live[id] = l
	}
	stats, _, err := r.Summary(ctx, today)
	return live, stats, err
}

// count adds t to l's counts of active turns by status.
func count(l analytics.Live, t turns.Turn) analytics.Live {
	switch t.Status {
	case turns.Waiting:
		l.Waiting++
	case turns.Waitlisted:
		l.Waitlisted++
	case turns.Held:
		l.Held++
	case turns.Called:
		l.Called++
	case turns.InService:
		l.InService++
	}
	return l
}
