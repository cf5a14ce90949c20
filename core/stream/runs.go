package stream

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qms-dev/qms/core/accounts"
)

// Runs shares one subscription per run among this process's screens of
// that run (ticket pages, display boards): for each event of the run it
// builds the run's view V once and hands that same value to every screen
// (a Member), so the cost of an event grows with the runs that have
// screens, not with the screens. A member's own part (one ticket among the
// run's) is drawn from V by the member, without a read of storage.
//
// A run's group lives while it has members, and lingers a few seconds
// after the last leaves, still following its run, so a reconnect storm
// (every screen of the run closing and reopening within seconds) finds
// the view built instead of rebuilding it for each screen.
type Runs[V any] struct {
	hub    *Hub
	scopes accounts.ScopeSet
	names  []string
	build  BuildFunc[V]
	opts   RunsOptions
	log    *slog.Logger

	mu     sync.Mutex
	groups map[runKey]*runGroup[V]
}

// BuildFunc builds a run's view as the run is now: after its events es,
// given prev, the view before them (es and prev are nil and the zero V
// when the group starts), so that what only the events change is carried
// over rather than read again. es holds more than one event when several
// arrived while the previous view was being built: one build then serves
// them all, so a group never falls more than a build behind its run.
type BuildFunc[V any] func(ctx context.Context, accountID, runID string, prev V, es []Entry) (V, error)

// RunsOptions tune Runs. Zero values take the defaults.
type RunsOptions struct {
	// Buffer is how many updates a member may have waiting before it is
	// cut off with ErrOverflow (default 16: an update is a pointer to the
	// shared view, so this costs 128 bytes a screen).
	Buffer int
	// Linger is how long a group with no member goes on following its run
	// (default 15 s).
	Linger time.Duration
	// Logger hears about builds that failed; nil is slog.Default().
	Logger *slog.Logger
	// Internal are the internal events of the run (a display token
	// revoked or changed: events.Internal) that the group hands to its
	// members as they are, with the view it has: they change no view, so
	// they cost no build. Each member looks for its own (its token's) and
	// ignores the others'.
	Internal []string
	// Changes are internal events that change the run's view (a turn's
	// change that raises no spec event: turn_state.changed): the group
	// receives them whatever its scopes, as Internal ones, and builds on
	// them as on the run's events (once per batch, for every member).
	Changes []string
}

// Update is one view of a run, shared by every member of the run: Entry is
// the event it follows (nil for the view a group starts with). Events that
// arrived together share one view, built after the last of them: each
// member still gets one update per event, in order.
type Update[V any] struct {
	Entry *Entry
	View  V
	// Internal, in the update Join returns only, are the latest internal
	// events the group handed out before the member joined (at most
	// recentInternal of them): a screen that checked its token before
	// joining finds here a revocation that committed in between, which
	// it would otherwise never hear of.
	Internal []Entry
}

type runKey struct{ account, run string }

// maxCoalesce bounds the events one build serves.
const maxCoalesce = 64

// recentInternal is how many of its latest internal events a group keeps
// for the members that join after them (Update.Internal). A revocation
// older than that committed long before any join still in flight checked
// its token.
const recentInternal = 64

// NewRuns builds a Runs over hub: a group follows its run's events named
// names, read with scopes, and builds its view with build.
func NewRuns[V any](hub *Hub, scopes accounts.ScopeSet, names []string, build BuildFunc[V], opts RunsOptions) *Runs[V] {
	if opts.Buffer <= 0 {
		opts.Buffer = 16
	}
	if opts.Linger <= 0 {
		opts.Linger = 15 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Runs[V]{hub: hub, scopes: scopes, names: names, build: build, opts: opts, log: log, groups: map[runKey]*runGroup[V]{}}
}

// Latest is the run's latest view when this process follows the run now
// (a group with members, or lingering after them), without joining it: a
// page's first paint is drawn from it instead of a read of storage. ok is
// false when no group follows the run, or its first view is not built yet.
func (r *Runs[V]) Latest(accountID, runID string) (v V, ok bool) {
	r.mu.Lock()
	g := r.groups[runKey{accountID, runID}]
	r.mu.Unlock()
	if g == nil {
		return v, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.last == nil {
		return v, false
	}
	return g.last.View, true
}

// Groups is the number of runs followed now (tests, metrics).
func (r *Runs[V]) Groups() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.groups)
}

// Join makes a member of the run's group (starting the group when there is
// none): first is the run's latest view, and the member receives every
// later one, in order, none missed, through Next. ctx bounds the wait for
// a group's first view.
func (r *Runs[V]) Join(ctx context.Context, accountID, runID string) (*Member[V], *Update[V], error) {
	k := runKey{accountID, runID}
	for {
		r.mu.Lock()
		g := r.groups[k]
		if g == nil {
			g = &runGroup[V]{runs: r, key: k, ready: make(chan struct{}), stop: make(chan struct{}),
				members: map[*Member[V]]struct{}{}}
			r.groups[k] = g
			go g.run()
		}
		r.mu.Unlock()
		select {
		case <-g.ready:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		g.mu.Lock()
		if g.err != nil || g.closed {
			err := g.err
			g.mu.Unlock()
			if err != nil {
				return nil, nil, err
			}
			continue // it closed meanwhile: start another
		}
		m := &Member[V]{group: g, ch: make(chan *Update[V], r.opts.Buffer), gone: make(chan struct{})}
		g.members[m] = struct{}{}
		if g.linger != nil {
			g.linger.Stop()
			g.linger = nil
		}
		first := g.last
		if len(g.internal) > 0 {
			withRecent := *first
			withRecent.Internal = slices.Clone(g.internal)
			first = &withRecent
		}
		g.mu.Unlock()
		return m, first, nil
	}
}

// runGroup follows one run for its members.
type runGroup[V any] struct {
	runs  *Runs[V]
	key   runKey
	ready chan struct{} // closed once the first view is built (or failed: err)
	stop  chan struct{} // closed to end the group

	mu      sync.Mutex
	members map[*Member[V]]struct{}
	last    *Update[V]
	// internal are the latest internal events handed out (Update.Internal).
	internal []Entry
	err      error
	closed   bool
	linger   *time.Timer
}

// run subscribes to the run's events, builds the first view, then one view
// per event, handing each to every member.
func (g *runGroup[V]) run() {
	r := g.runs
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-g.stop:
		case <-r.hub.ctx.Done():
		case <-ctx.Done():
		}
		cancel()
	}()
	// Subscribe before the first build: a change in between arrives as an
	// event, never falls between the two.
	sub, err := r.hub.Subscribe(ctx, Request{AccountID: g.key.account,
		Filter: Filter{Scopes: r.scopes, RunID: g.key.run, Names: r.names,
			Internal: slices.Concat(r.opts.Internal, r.opts.Changes)}})
	var first V
	if err == nil {
		var none V
		first, err = g.buildRetrying(ctx, none, nil)
		if err != nil {
			sub.Close()
		}
	}
	if err != nil {
		g.fail(err)
		return
	}
	defer sub.Close()
	g.mu.Lock()
	g.last = &Update[V]{View: first}
	g.mu.Unlock()
	close(g.ready)
	for {
		e, err := sub.Next(ctx, time.Minute)
		switch {
		case err == nil:
		case errors.Is(err, ErrIdle):
			continue
		default:
			// Overflow (this process's group fell a second behind its
			// run), the hub closing, or the group ending: every member
			// ends with it; their clients reconnect.
			g.end(err)
			return
		}
		// What else has arrived meanwhile is built in the same view.
		es := []Entry{e}
		for len(es) < maxCoalesce {
			more, err := sub.Next(ctx, 0)
			if err != nil {
				break // ErrIdle: nothing more now; an end shows next round
			}
			es = append(es, more)
		}
		// Internal events alone change no view: the last one serves.
		g.mu.Lock()
		v := g.last.View
		g.mu.Unlock()
		if slices.ContainsFunc(es, func(e Entry) bool { return !slices.Contains(r.opts.Internal, e.Event.Name) }) {
			v, err = g.buildRetrying(ctx, v, es)
			if err != nil {
				g.end(err)
				return
			}
		}
		g.mu.Lock()
		for _, e := range es {
			if slices.Contains(r.opts.Internal, e.Event.Name) {
				if len(g.internal) == recentInternal {
					g.internal = slices.Delete(g.internal, 0, 1)
				}
				g.internal = append(g.internal, e)
			}
		}
		for i := range es {
			u := &Update[V]{Entry: &es[i], View: v}
			g.last = u
			for m := range g.members {
				select {
				case m.ch <- u:
				default:
					delete(g.members, m)
					m.end(ErrOverflow)
				}
			}
		}
		for m := range g.members {
			m.wake()
		}
		g.mu.Unlock()
	}
}

// buildRetrying builds a view, retrying a failed build (storage away for a
// moment) after 100 ms doubling to 1 s, for up to 10 s: members wait
// rather than all reconnecting at once.
func (g *runGroup[V]) buildRetrying(ctx context.Context, prev V, es []Entry) (V, error) {
	wait := errorMin
	deadline := time.Now().Add(10 * time.Second)
	for {
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, err := g.runs.build(bctx, g.key.account, g.key.run, prev, es)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return v, err
		}
		g.runs.log.Warn("stream: building a run's view failed; retrying", "run", g.key.run, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, errorMax)
	}
}

// fail ends a group whose first view could not be built.
func (g *runGroup[V]) fail(err error) {
	g.runs.mu.Lock()
	if g.runs.groups[g.key] == g {
		delete(g.runs.groups, g.key)
	}
	g.runs.mu.Unlock()
	g.mu.Lock()
	g.err, g.closed = err, true
	g.mu.Unlock()
	close(g.ready)
}

// end ends the group and every member with err.
func (g *runGroup[V]) end(err error) {
	g.runs.mu.Lock()
	if g.runs.groups[g.key] == g {
		delete(g.runs.groups, g.key)
	}
	g.runs.mu.Unlock()
	g.mu.Lock()
	g.closed = true
	for m := range g.members {
		m.end(err)
	}
	g.members = nil
	g.mu.Unlock()
}

// leave removes m; the group lingers, then ends if no one joined.
func (g *runGroup[V]) leave(m *Member[V]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.members[m]; !ok {
		return
	}
	delete(g.members, m)
	if len(g.members) > 0 || g.closed || g.linger != nil {
		return
	}
	g.linger = time.AfterFunc(g.runs.opts.Linger, g.expire)
}

// expire ends a group still without members after lingering.
func (g *runGroup[V]) expire() {
	r := g.runs
	r.mu.Lock()
	g.mu.Lock()
	if len(g.members) > 0 || g.closed {
		g.mu.Unlock()
		r.mu.Unlock()
		return
	}
	g.closed = true
	g.linger = nil
	if r.groups[g.key] == g {
		delete(r.groups, g.key)
	}
	g.mu.Unlock()
	r.mu.Unlock()
	close(g.stop)
}

// Member is one screen of a run: it receives every view of the run after
// the one it joined with.
type Member[V any] struct {
	group  *runGroup[V]
	ch     chan *Update[V]
	gone   chan struct{}
	once   sync.Once
	err    error
	notify atomic.Pointer[func()]
}

// OnUpdate sets f to be called (from the group's goroutine: it must not
// block) after each update is queued for the member and when it ends: a
// stream that waits on something else than Next (its connection) wakes
// up by it, and takes what is pending with TryNext.
func (m *Member[V]) OnUpdate(f func()) { m.notify.Store(&f) }

func (m *Member[V]) wake() {
	if f := m.notify.Load(); f != nil {
		(*f)()
	}
}

// TryNext returns the next pending update without waiting: nil, nil when
// there is none; nil and the error that ended the member once the updates
// queued before it ended are taken.
func (m *Member[V]) TryNext() (*Update[V], error) {
	select {
	case u := <-m.ch:
		return u, nil
	default:
	}
	select {
	case <-m.gone:
		select {
		case u := <-m.ch:
			return u, nil
		default:
		}
		return nil, m.err
	default:
		return nil, nil
	}
}

// Pending reports whether TryNext has something to return.
func (m *Member[V]) Pending() bool {
	if len(m.ch) > 0 {
		return true
	}
	select {
	case <-m.gone:
		return true
	default:
		return false
	}
}

// Next returns the run's next view. It returns ErrIdle when none came
// within wait, the error that ended the member (ErrOverflow when it fell
// behind, ErrClosed when the process stops, or what ended its run's
// group), or ctx's error.
func (m *Member[V]) Next(ctx context.Context, wait time.Duration) (*Update[V], error) {
	select {
	case u := <-m.ch:
		return u, nil
	default:
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case u := <-m.ch:
		return u, nil
	case <-m.gone:
		// Updates sent before it ended still go out first.
		select {
		case u := <-m.ch:
			return u, nil
		default:
		}
		return nil, m.err
	case <-timer.C:
		return nil, ErrIdle
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close leaves the run; calling it again is harmless.
func (m *Member[V]) Close() {
	m.group.leave(m)
	m.end(ErrClosed)
}

func (m *Member[V]) end(err error) {
	m.once.Do(func() {
		m.err = err
		close(m.gone)
		m.wake()
	})
}
