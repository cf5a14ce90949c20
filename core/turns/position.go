package turns

import (
	"context"
	"math"
	"sync"
	"sync/atomic"

	"github.com/qms-dev/qms/core/queues"
)

// Wait estimate parameters (docs/turns.md, "Wait estimate").
const (
	// DefaultServiceSeconds is the service time assumed per turn when the
	// queue has no completed turn with a measured service yet.
	DefaultServiceSeconds = 300
	// ServiceSamples is how many of the queue's latest service times the
	// moving average takes.
	ServiceSamples = 20
)

// lineCache keeps, per run, the waiting line in order as of a line
// version. Customers poll their position far more often than the line
// moves; while the run's version is unchanged every position is a binary
// search in memory. The version is read from storage on every request, so
// a change made by any process is seen at once: a snapshot a few versions
// behind is brought up to date from the recorded changes (Repository.
// LineChanges), and only one too far behind reloads the whole line.
type lineCache struct {
	// runs maps a run's id to its *lineSnapshot. A read takes no lock:
	// every GET of a waiting turn reads it, and a mutex taken by both
	// cores for it was a cache line passed between them each time
	// (issue 30, P1). Stores take mu, which keeps n, the number of runs.
	runs sync.Map
	mu   sync.Mutex
	n    int
	// shared is set once an answer found a run's line changed by another
	// process since this one cached it: from then on, an intake's lock
	// reads the changes after the cached version in its own round trip
	// (IntakeLock.LineAfter). A lone process never sets it, and sends no
	// such read.
	shared atomic.Bool
}

// lineSnapshot is a run's line at a version. It is never changed once
// made: readers share it, and a patch makes a new one.
type lineSnapshot struct {
	version int64
	line    *lineNode // persistent: patches share it (linetree.go)
}

// maxCachedRuns bounds the memory the cache holds: past it, snapshots of
// other runs are dropped (they reload on their next read).
const maxCachedRuns = 512

// maxLinePatch is how many versions behind a snapshot may be and still be
// patched from the recorded changes rather than reloaded. Storage keeps
// more than this many changes per run (see LineChangesKept).
const maxLinePatch = 256

// LineChangesKept is how many of a run's latest line changes storage must
// keep for readers to patch their snapshots; older ones may be pruned.
const LineChangesKept = 1024

func newLineCache() *lineCache { return &lineCache{} }

func (c *lineCache) get(runID string) *lineSnapshot {
	if v, ok := c.runs.Load(runID); ok {
		return v.(*lineSnapshot)
	}
	return nil
}

func (c *lineCache) put(runID string, snap *lineSnapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.get(runID)
	if old != nil && old.version > snap.version {
		return // a concurrent reader already stored a newer line
	}
	if old == nil {
		if c.n >= maxCachedRuns {
			c.runs.Range(func(id, _ any) bool {
				if id != runID {
					c.runs.Delete(id)
					c.n--
					return false
				}
				return true
			})
		}
		c.n++
	}
	c.runs.Store(runID, snap)
}

// snapshot returns the run's current line, from the cache when its version
// is still the run's version.
func (s *Service) snapshot(ctx context.Context, runID string) (*lineSnapshot, error) {
	v, err := s.repo.LineVersion(ctx, runID)
	if err != nil {
		return nil, err
	}
	return s.snapshotAt(ctx, runID, v)
}

// snapshotAt is snapshot once the run's line version v has been read.
func (s *Service) snapshotAt(ctx context.Context, runID string, v int64) (*lineSnapshot, error) {
	old := s.line.get(runID)
	if old != nil && old.version == v {
		return old, nil
	}
	if old != nil && old.version < v && v-old.version <= maxLinePatch {
		changes, err := s.repo.LineChanges(ctx, runID, old.version, v)
		if err != nil {
			return nil, err
		}
		if snap, ok := old.patch(changes, v); ok {
			s.line.put(runID, snap)
			return snap, nil
		}
	}
	version, keys, err := s.repo.WaitingLine(ctx, runID)
	if err != nil {
		return nil, err
	}
	snap := &lineSnapshot{version: version, line: lineTreeOf(keys)}
	s.line.put(runID, snap)
	return snap, nil
}

// patch applies the changes after the snapshot's version up to version v
// to a copy of its line. It fails, and the caller reloads, unless the
// changes are exactly the versions in between and each removes keys the
// line has and adds keys it has not.
func (snap *lineSnapshot) patch(changes []LineChange, v int64) (*lineSnapshot, bool) {
	if int64(len(changes)) != v-snap.version {
		return nil, false
	}
	line := snap.line
	for i, c := range changes {
		if c.Reset || c.Version != snap.version+int64(i)+1 {
			return nil, false
		}
		var ok bool
		for _, k := range c.Removed {
			if line, ok = line.remove(k); !ok {
				return nil, false
			}
		}
		for _, k := range c.Added {
			if line, ok = line.insert(k); !ok {
				return nil, false
			}
		}
	}
	return &lineSnapshot{version: v, line: line}, true
}

func compareKeys(a, b LineKey) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

// position is the 1-based place of key in the line; false when the key is
// not in it (the turn left the line since it was read).
func (snap *lineSnapshot) position(key LineKey) (int, bool) {
	if i, found := snap.line.rank(key); found {
		return i + 1, true
	}
	return 0, false
}

// viewer builds views of turns of one queue, loading what they share once.
//
// It holds no maps: a view of one turn (GET /turns/{id}, the answer of a
// change) made five of them, and most of its allocations (issue 16, P1).
// The turns it views are of one run, or of very few.
type viewer struct {
	s        *Service
	q        queues.Queue
	stations []queues.Station
	// byID indexes stations once a queue has many (stationByID).
	byID    map[string]queues.Station
	servers int
	// avg and basis are loaded on the first waiting turn.
	avg     float64
	basis   string
	samples []float64
	// first is what the viewer knows of the first run it met, more of any
	// other (nruns in all). The first is kept inline, so that the viewer
	// of one turn can live on its builder's stack: it was a heap object
	// of 700 bytes with pointers (issue 16, P1).
	first runView
	more  []runView
	nruns int
}

// runView is what a viewer knows of one run.
type runView struct {
	id   string
	line *lineSnapshot // nil until read
	// open says whether the run is open (read on its first waiting turn):
	// a closed run calls nobody, so it promises no wait.
	open, openKnown bool
	// version is the line version already read with the turn (ViewSource),
	// so the snapshot needs no read of its own.
	version      int64
	versionKnown bool
}

// run returns what the viewer knows of a run, adding it. The pointer is
// good until the next call.
func (vb *viewer) run(id string) *runView {
	if vb.nruns > 0 && vb.first.id == id {
		return &vb.first
	}
	for i := range vb.more {
		if vb.more[i].id == id {
			return &vb.more[i]
		}
	}
	vb.nruns++
	if vb.nruns == 1 {
		vb.first = runView{id: id}
		return &vb.first
	}
	vb.more = append(vb.more, runView{id: id})
	return &vb.more[len(vb.more)-1]
}

// setOpen records whether a run is open.
func (vb *viewer) setOpen(runID string, open bool) {
	r := vb.run(runID)
	r.open, r.openKnown = open, true
}

// stationIndexFrom is how many stations a queue has before stationByID
// indexes them rather than scan them.
const stationIndexFrom = 16

// stationByID returns the queue's station with that id.
func (vb *viewer) stationByID(id string) (queues.Station, bool) {
	if len(vb.stations) < stationIndexFrom {
		for _, st := range vb.stations {
			if st.ID == id {
				return st, true
			}
		}
		return queues.Station{}, false
	}
	if vb.byID == nil {
		vb.byID = make(map[string]queues.Station, len(vb.stations))
		for _, st := range vb.stations {
			if _, dup := vb.byID[st.ID]; !dup {
				vb.byID[st.ID] = st
			}
		}
	}
	st, ok := vb.byID[id]
	return st, ok
}

// ViewContext is what a turn's view needs besides the turn, read with it
// from one snapshot.
type ViewContext struct {
	Queue    queues.Queue
	Stations []queues.Station
	// LineVersion is the turn's run's line version.
	LineVersion int64
	RunOpen     bool
	// ServiceSeconds are the queue's latest ServiceSamples service times,
	// newest first.
	ServiceSeconds []float64
}

func (s *Service) viewer(ctx context.Context, q queues.Queue) (*viewer, error) {
	sts, err := s.queues.ListStations(ctx, q.ID)
	if err != nil {
		return nil, err
	}
	return s.viewerOf(q, sts), nil
}

// viewerOf is viewer with the queue's stations already read.
func (s *Service) viewerOf(q queues.Queue, sts []queues.Station) *viewer {
	return &viewer{s: s, q: q, stations: sts, servers: servers(q, len(sts))}
}

// viewOf builds a turn's view from what GetForView read with it: no
// further read unless the run's line changed since this process last
// looked.
func (s *Service) viewOf(ctx context.Context, t Turn, vc ViewContext) (View, error) {
	vb := viewer{s: s, q: vc.Queue, stations: vc.Stations, servers: servers(vc.Queue, len(vc.Stations))}
	r := vb.run(t.RunID)
	r.open, r.openKnown = vc.RunOpen, true
	r.version, r.versionKnown = vc.LineVersion, true
	vb.samples = vc.ServiceSeconds
	vb.avg, vb.basis = averageService(vc.ServiceSeconds)
	return vb.view(ctx, t)
}

// servers is how many turns the queue serves at once: its stations, or its
// dispatchers when it has none, at least one.
func servers(q queues.Queue, stations int) int {
	if stations > 0 {
		return stations
	}
	return max(q.Dispatchers, 1)
}

// View builds the full view of a turn: position and wait estimate when it
// waits, queue data, station.
func (s *Service) View(ctx context.Context, t Turn) (View, error) {
	q, err := s.queues.GetQueue(ctx, t.QueueID)
	if err != nil {
		return View{}, err
	}
	vb, err := s.viewer(ctx, q)
	if err != nil {
		return View{}, err
	}
	return vb.view(ctx, t)
}

// txView is the answer of a change, built inside its transaction from what
// the change already read and wrote (the queue and run it locked, the line
// change it recorded), so nothing is read again after the commit: a
// waiting turn's line is this process's cached line patched with the
// change, or, when the cache is further behind, read in the transaction.
func (s *Service) txView(ctx context.Context, q queues.Queue, run queues.Run, t Turn, lc LineChange) (View, error) {
	sts, samples, err := s.repo.QueueForView(ctx, q.ID)
	if err != nil {
		return View{}, err
	}
	vb := s.viewerOf(q, sts)
	vb.samples = samples
	vb.avg, vb.basis = averageService(samples)
	vb.setOpen(run.ID, run.Open())
	if t.Status == Waiting && t.RunID == run.ID {
		snap, err := s.txSnapshot(ctx, run.ID, lc)
		if err != nil {
			return View{}, err
		}
		vb.run(run.ID).line = snap
	}
	return vb.view(ctx, t)
}

// txSnapshot is the run's line as the transaction leaves it. The run is
// locked, so no other change of its line can come in between.
func (s *Service) txSnapshot(ctx context.Context, runID string, lc LineChange) (*lineSnapshot, error) {
	var snap *lineSnapshot
	old, cl := s.lineInTx(ctx, runID)
	if old != nil && lc.Version > 0 && old.version < lc.Version &&
		lc.Version-old.version <= maxLinePatch {
		changes := []LineChange{lc}
		if old.version < lc.Version-1 {
			s.line.shared.Store(true)
			// Another process changed the line since this one cached it.
			// Those changes committed before the run's lock was taken: the
			// few rows that record them patch the line, where reading the
			// whole line would cost as much as the line is long, under
			// the run's lock (docs/scaling.md, several processes).
			between, err := s.repo.LineChanges(ctx, runID, old.version, lc.Version-1)
			if err != nil {
				return nil, err
			}
			changes = append(between, lc)
		}
		snap, _ = old.patch(changes, lc.Version)
	}
	if snap == nil {
		version, keys, err := s.repo.WaitingLine(ctx, runID)
		if err != nil {
			return nil, err
		}
		snap = &lineSnapshot{version: version, line: lineTreeOf(keys)}
	}
	if cl != nil {
		cl.next = snap // the next intake in the transaction starts from it
	}
	// Cached only once committed: a rolled-back change never happened.
	s.uow.AfterCommit(ctx, func() { s.line.put(runID, snap) })
	return snap, nil
}

// txKeepLine keeps the run's line as the transaction leaves it after a
// change the answer needed no line for (a WAITLISTED turn's intake: an
// empty change, or the turns it promoted), when the transaction's line is
// the version just before, so nothing is read for it. Otherwise the next
// change in the transaction, or the cache after the commit, would be a
// version behind and read the change back (and take the line for one
// other processes share).
func (s *Service) txKeepLine(ctx context.Context, runID string, lc LineChange) {
	old, cl := s.lineInTx(ctx, runID)
	if lc.Version == 0 || old == nil || old.version != lc.Version-1 {
		return
	}
	snap, ok := old.patch([]LineChange{lc}, lc.Version)
	if !ok {
		return
	}
	if cl != nil {
		cl.next = snap
	}
	s.uow.AfterCommit(ctx, func() { s.line.put(runID, snap) })
}

func (vb *viewer) view(ctx context.Context, t Turn) (View, error) {
	v := View{Turn: t, Queue: QueueRef{ID: vb.q.ID, Name: vb.q.Name, Type: vb.q.Type}}
	if v.FormResponse == nil {
		v.FormResponse = map[string]string{}
	}
	if t.StationID != nil {
		if st, ok := vb.stationByID(*t.StationID); ok {
			v.Station = &StationRef{ID: st.ID, Label: st.Label}
		}
	}
	if t.Status != Waiting {
		return v, nil
	}
	r := vb.run(t.RunID)
	snap := r.line
	if snap == nil {
		var err error
		if r.versionKnown {
			snap, err = vb.s.snapshotAt(ctx, t.RunID, r.version)
		} else {
			snap, err = vb.s.snapshot(ctx, t.RunID)
		}
		if err != nil {
			return View{}, err
		}
		r.line = snap
	}
	pos, ok := snap.position(t.Key())
	if !ok {
		return v, nil
	}
	// The position and the estimate with its range are one allocation.
	w := &waitParts{pos: pos}
	v.Position = &w.pos
	open, err := vb.runOpen(ctx, t.RunID)
	if err != nil || !open {
		return v, err // its place in line, but no wait estimate while nobody is called
	}
	if vb.basis == "" {
		samples, err := vb.s.repo.RecentServiceSeconds(ctx, vb.q.ID, ServiceSamples)
		if err != nil {
			return View{}, err
		}
		vb.avg, vb.basis = averageService(samples)
		vb.samples = samples
	}
	w.estimate = estimate(pos, vb.avg, vb.basis, vb.servers)
	v.WaitEstimate = &w.estimate
	if rg, ok := waitRange(pos, vb.samples, vb.servers); ok {
		w.rng = rg
		v.WaitEstimate.Range = &w.rng
	}
	return v, nil
}

// waitParts holds what a waiting turn's view points to.
type waitParts struct {
	pos      int
	estimate WaitEstimate
	rng      WaitRange
}

// runOpen reports whether the run is open, once per run and view.
func (vb *viewer) runOpen(ctx context.Context, runID string) (bool, error) {
	if r := vb.run(runID); r.openKnown {
		return r.open, nil
	}
	run, err := vb.s.queues.GetRun(ctx, runID)
	if err != nil {
		return false, err
	}
	vb.setOpen(runID, run.Open())
	return run.Open(), nil
}

// averageService is the mean of the samples, or the default when there are
// none.
func averageService(samples []float64) (float64, string) {
	if len(samples) == 0 {
		return DefaultServiceSeconds, "default"
	}
	sum := 0.0
	for _, x := range samples {
		sum += x
	}
	return sum / float64(len(samples)), "history"
}

// estimate is the wait of the turn at position: every turn up to and
// including it takes avg seconds of service, shared among servers working
// side by side. Position 1 with one server waits one service, the one
// ahead of it at the counter now (on average).
func estimate(position int, avg float64, basis string, servers int) WaitEstimate {
	secs := int(math.Round(float64(position) * avg / float64(servers)))
	return WaitEstimate{
		Seconds: secs, Minutes: (secs + 59) / 60, Basis: basis,
		AverageServiceSeconds: int(math.Round(avg)), Servers: servers,
	}
}
