package memory

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/turns"
)

// StreamLog is the memory stream.Log and stream.Notifier: a copy of the
// event log in commit order. It subscribes to the event bus; each event
// gets the next sequence number inside the transaction that raised it
// (transactions hold the store's write lock, so sequence order is commit
// order, and a rolled-back event gives its number back), and the hub is
// woken after the commit.
//
// It keeps the events of twice the stream's retention (measured on the
// events' own times), so memory mode's stream does not grow for ever.
type StreamLog struct {
	s         *Store
	keep      time.Duration
	rows      []streamRow // ascending seq
	seq       uint64
	byID      map[string]uint64
	wake      atomic.Pointer[func(string)]
	lastPrune atomic.Int64 // unix nanoseconds of the newest event at the last prune
}

type streamRow struct {
	seq uint64
	e   platform.Event
}

// NewStreamLog builds the stream log on s. Subscribe it to the event bus.
func NewStreamLog(s *Store) *StreamLog {
	return &StreamLog{s: s, keep: 2 * stream.DefaultRetention, byID: map[string]uint64{}}
}

// OnEvent records e at the next position, in e's transaction, and wakes the
// hub once the transaction commits.
func (l *StreamLog) OnEvent(ctx context.Context, e platform.Event) error {
	l.s.write(ctx, func() func() {
		l.seq++
		l.rows = append(l.rows, streamRow{seq: l.seq, e: e})
		l.byID[e.ID] = l.seq
		return func() {
			// Undo runs newest first, so this row is the last one.
			l.rows = l.rows[:len(l.rows)-1]
			delete(l.byID, e.ID)
			l.seq--
		}
	})
	l.s.AfterCommit(ctx, func() {
		l.prune(e.OccurredAt)
		if w := l.wake.Load(); w != nil {
			(*w)(e.AccountID)
		}
	})
	return nil
}

// prune drops the events older than keep before the newest one, at most
// once a minute of event time (checked before taking the store's lock).
func (l *StreamLog) prune(newest time.Time) {
	last := l.lastPrune.Load()
	if newest.UnixNano()-last < int64(time.Minute) || !l.lastPrune.CompareAndSwap(last, newest.UnixNano()) {
		return
	}
	l.s.write(context.Background(), func() func() {
		cut := sort.Search(len(l.rows), func(i int) bool { return !l.rows[i].e.OccurredAt.Before(newest.Add(-l.keep)) })
		for _, r := range l.rows[:cut] {
			delete(l.byID, r.e.ID)
		}
		l.rows = append([]streamRow(nil), l.rows[cut:]...)
		return nil
	})
}

// Run implements stream.Notifier: wake hears of every commit until ctx
// ends.
func (l *StreamLog) Run(ctx context.Context, wake func(accountID string)) error {
	l.wake.Store(&wake)
	// Commits before this registration woke nobody: every subscriber looks
	// at the log once now.
	wake("")
	<-ctx.Done()
	l.wake.CompareAndSwap(&wake, nil)
	return ctx.Err()
}

// Head implements stream.Log.
func (l *StreamLog) Head(ctx context.Context, _ string) (p stream.Position, err error) {
	l.s.read(ctx, func() { p = stream.Position{Tx: l.seq} })
	return p, nil
}

// Locate implements stream.Log.
func (l *StreamLog) Locate(ctx context.Context, accountID, eventID string) (p stream.Position, at time.Time, ok bool, err error) {
	l.s.read(ctx, func() {
		seq, found := l.byID[eventID]
		if !found {
			return
		}
		i := sort.Search(len(l.rows), func(i int) bool { return l.rows[i].seq >= seq })
		if i < len(l.rows) && l.rows[i].e.AccountID == accountID {
			p, at, ok = stream.Position{Tx: seq}, l.rows[i].e.OccurredAt, true
		}
	})
	return p, at, ok, nil
}

// Read implements stream.Log. Every committed event's place is final here,
// so pending is always false.
func (l *StreamLog) Read(ctx context.Context, accountID string, after stream.Position, limit int) (out []stream.Entry, pending bool, err error) {
	l.s.read(ctx, func() {
		i := sort.Search(len(l.rows), func(i int) bool { return l.rows[i].seq > after.Tx })
		for ; i < len(l.rows) && (limit <= 0 || len(out) < limit); i++ {
			if r := l.rows[i]; r.e.AccountID == accountID {
				out = append(out, stream.Entry{Position: stream.Position{Tx: r.seq}, Event: r.e})
			}
		}
	})
	return out, false, nil
}

// RecentCalls implements display.Calls: the run's last turn.called
// events, newest first.
func (l *StreamLog) RecentCalls(ctx context.Context, accountID, runID string, limit int) (out []platform.Event, err error) {
	l.s.read(ctx, func() {
		for i := len(l.rows) - 1; i >= 0 && len(out) < limit; i-- {
			if e := l.rows[i].e; e.AccountID == accountID && e.RunID == runID && e.Name == platform.EventName[turns.TurnCalled]() {
				out = append(out, e)
			}
		}
	})
	return out, nil
}
