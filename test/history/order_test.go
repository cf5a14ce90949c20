package history

import (
	"net/http"
	"sort"
	"time"
)

// created is a turn an acknowledged intake made WAITING, and when it was
// first touched after that: the start of the first request on it that may
// have changed it (any but a read; the next that called it too), or far
// in the future when none did.
type created struct {
	turn, run, priority string
	intake              *Op
	touched             time.Time
	toucher             *Op
}

// checkNextOrder: next never passes over a turn that certainly waited
// ahead of the one it called, however busy the line (issue 24/27/31: a
// row written about a waiting turn, such as a ticket link or the joined
// message's, took KEY SHARE on the turn's row through its foreign key, and
// next, then FOR UPDATE SKIP LOCKED, skipped that turn and called the one
// behind it). The quiescent drains check the order of sequential calls;
// this checks every next under load.
//
// It is read from the history alone, so only where the order is certain:
// turns made WAITING by an acknowledged intake and untouched since (no
// release, re-entry or priority change has moved them in the line, and no
// job moves a WAITING turn). Of two such turns of a run at one priority,
// the one whose intake was answered before the other's was sent drew the
// lower arrival sequence (turn_seq, one sequence for every process), so it
// is ahead. A next that called the later one while the earlier one was
// created before the next began and untouched until it ended passed a
// waiting turn by.
func checkNextOrder(ck *checker, ops []*Op, byTurn map[string][]*Op) {
	far := time.Now().Add(24 * time.Hour)
	turns := map[string]*created{}
	for _, o := range ops {
		if o.Kind != "intake" || o.Status != http.StatusCreated || o.Replayed {
			continue
		}
		v := o.TurnView()
		if v.ID == "" || v.Status != "WAITING" || turns[v.ID] != nil {
			continue
		}
		c := &created{turn: v.ID, run: o.Run, priority: v.Priority, intake: o, touched: far}
		for _, other := range byTurn[v.ID] {
			if other.Method != http.MethodGet && other.Start.Before(c.touched) {
				c.touched, c.toucher = other.Start, other
			}
		}
		turns[v.ID] = c
	}
	// Per run and priority, the turns by the end of their intake, with the
	// latest first touch among each prefix: a later arrival's next only
	// needs the one of the turns answered before it that stayed longest.
	type line struct {
		byEnd  []*created
		latest []*created // latest[i]: the turn of byEnd[:i+1] touched last
	}
	lines := map[string]*line{}
	for _, c := range turns {
		k := c.run + "/" + c.priority
		if lines[k] == nil {
			lines[k] = &line{}
		}
		lines[k].byEnd = append(lines[k].byEnd, c)
	}
	for _, l := range lines {
		sort.Slice(l.byEnd, func(i, j int) bool { return l.byEnd[i].intake.End.Before(l.byEnd[j].intake.End) })
		l.latest = make([]*created, len(l.byEnd))
		for i, c := range l.byEnd {
			l.latest[i] = c
			if i > 0 && l.latest[i-1].touched.After(c.touched) {
				l.latest[i] = l.latest[i-1]
			}
		}
	}
	for _, n := range ops {
		if n.Kind != "next" || n.Status != http.StatusCreated {
			continue
		}
		x := turns[n.Turn]
		// The called turn must be where its intake put it until this next
		// took it: first touched by this very next, and by nothing else
		// before the next ended (a priority change, or a call, hold and
		// release, may have committed first and moved it ahead).
		if x == nil || x.toucher != n || touchedDuring(byTurn[x.turn], n) {
			continue
		}
		l := lines[x.run+"/"+x.priority]
		bound := x.intake.Start
		if n.Start.Before(bound) {
			bound = n.Start
		}
		i := sort.Search(len(l.byEnd), func(i int) bool { return !l.byEnd[i].intake.End.Before(bound) })
		if i == 0 {
			continue
		}
		y := l.latest[i-1]
		ck.check("next never passes over a turn waiting ahead of it (same priority, joined earlier, untouched)",
			y.touched.Before(n.End),
			"%s called %s (intake answered %s), while %s (intake answered %s..%s) waited ahead of it untouched until %s",
			n, x.turn, x.intake.End.Format("15:04:05.000"), y.turn, y.intake.Start.Format("15:04:05.000"),
			y.intake.End.Format("15:04:05.000"), touchedAt(y))
	}
}

// touchedDuring reports whether an op on the turn other than n, not a
// read, began before n ended.
func touchedDuring(ops []*Op, n *Op) bool {
	for _, o := range ops {
		if o != n && o.Kind != "intake" && o.Method != http.MethodGet && o.Start.Before(n.End) {
			return true
		}
	}
	return false
}

func touchedAt(c *created) string {
	if c.toucher == nil {
		return "the end"
	}
	return c.touched.Format("15:04:05.000") + " (" + c.toucher.Kind + ")"
}
