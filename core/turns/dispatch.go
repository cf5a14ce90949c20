package turns

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// change is one operation on one locked turn: the turn before and after,
// its queue and run, and what the operation asks of the unit of work
// besides storing the turn.
type change struct {
	op     Operation
	before Turn
	t      Turn
	q      queues.Queue
	run    queues.Run
	now    time.Time
	// event is the spec event the change raises; nil raises the internal
	// turn_state.changed (stateChangedEvent).
	event eventData
	// call is set when the operation made a new call: its tolerance job
	// is scheduled.
	call bool
	// line is the change commit recorded in the run's line (Version 0
	// for none).
	line LineChange
	// reason is a cancellation's reason, for the watchers.
	reason string
}

// mutate runs fn on the locked turn of the account in one unit of work,
// then stores the turn and does what follows from the change (event,
// tolerance job, promotion from the waitlist, line version). The answer is
// the turn as committed.
func (s *Service) mutate(ctx context.Context, accountID, id string, op Operation, fn func(ctx context.Context, c *change) error) (View, error) {
	var view View
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		c, err := s.lock(ctx, accountID, id, op)
		if err != nil {
			return err
		}
		if err := check(c.t, op); err != nil {
			return err
		}
		if err := fn(ctx, c); err != nil {
			return err
		}
		if err := s.commit(ctx, c); err != nil {
			return err
		}
		view, err = s.txView(ctx, c.q, c.run, c.t, c.line)
		return err
	})
	if err != nil {
		return View{}, err
	}
	return view, nil
}

// lock takes the locks of an operation on one turn in the order of the
// lock protocol (docs/turns.md): the turn's run first, then the turn.
// accountID "" is a job acting for the turn's own account.
func (s *Service) lock(ctx context.Context, accountID, id string, op Operation) (*change, error) {
	owner, run, q, err := s.repo.LockRunOfTurn(ctx, id)
	if err != nil {
		return nil, err
	}
	if accountID != "" && owner != accountID {
		return nil, platform.ForeignResource("turn")
	}
	t, err := s.repo.GetForUpdate(ctx, id)
	if err != nil {
		return nil, err
	}
	return &change{op: op, before: t, t: t, q: q, run: run, now: s.clock.Now()}, nil
}

// commit stores the change and its consequences. The line version is
// bumped last, after every other write, so the row lock it takes is held
// for as short a time as possible.
func (s *Service) commit(ctx context.Context, c *change) error {
	c.t.UpdatedAt = c.now
	if err := s.returning(ctx, c); err != nil {
		return err
	}
	if err := s.repo.Update(ctx, c.t); err != nil {
		return err
	}
	lc := lineDelta(c.before, c.t)
	if c.mayPromote() {
		promoted, _, err := s.promote(ctx, c.q, c.run)
		if err != nil {
			return err
		}
		for _, p := range promoted {
			if p.ID == c.t.ID {
				c.t = p // its own change sent it to the waitlist, and there was room
			}
		}
		lc.Added = append(lc.Added, keys(promoted)...)
	}
	if c.t.AppointmentID != nil {
		for _, f := range s.followers {
			if err := f.TurnChanged(ctx, c.before, c.t); err != nil {
				return err
			}
		}
	}
	if len(s.watchers) > 0 {
		if err := s.watch(ctx, Watched{Queue: c.q, Before: c.before, After: c.t, Op: c.op, Reason: c.reason, Line: lc}); err != nil {
			return err
		}
	}
	// Every committed change of a turn raises an event: its spec event,
	// else the internal turn_state.changed, so the screens hear it (its
	// insert waits for the change's next statement: no round trip).
	ev := c.event
	if ev == nil {
		ev = stateChangedEvent(c.op, c.before.Status)
	}
	if err := s.emit(ctx, c.t, ev); err != nil {
		return err
	}
	if c.call {
		if err := s.scheduleExpiry(ctx, c.q, c.t); err != nil {
			return err
		}
	}
	var err error
	c.line, err = s.bumpLine(ctx, c.t.RunID, lc)
	return err
}

// mayPromote reports whether the change can have made room for the
// waitlist or put a turn on it: an active turn finished, or a turn went
// (back) to the waitlist.
func (c *change) mayPromote() bool {
	left := c.before.Status.Active() && !c.t.Status.Active()
	return left || (c.t.Status == Waitlisted && c.before.Status != Waitlisted)
}

// returning applies the intake guards that rule on a finished turn coming
// back (re-entry, reopen): a rule on the turns a customer may hold at once
// holds then too.
func (s *Service) returning(ctx context.Context, c *change) error {
	if !c.before.Status.Finished() || c.t.Status.Finished() {
		return nil
	}
	for _, g := range s.guards {
		if err := g.Returning(ctx, c.q, c.t); err != nil {
			return err
		}
	}
	return nil
}

// lineDelta is what a change of one turn did to the waiting line: it left
// it, joined it, or moved in it (both).
func lineDelta(before, after Turn) LineChange {
	var lc LineChange
	moved := before.Key() != after.Key()
	if before.Status == Waiting && (after.Status != Waiting || moved) {
		lc.Removed = append(lc.Removed, before.Key())
	}
	if after.Status == Waiting && (before.Status != Waiting || moved) {
		lc.Added = append(lc.Added, after.Key())
	}
	return lc
}

// promote moves WAITLISTED turns of an open run into the line, first in
// line order, while there is room under capacity.maxTurns, when the queue
// promotes automatically (capacity.autoPromote, the default). The caller
// holds the run's lock, so promotions and admissions count one at a time.
// It returns the promoted turns (as stored) and the run's occupancy after
// them (zero without maxTurns, where nothing is counted).
func (s *Service) promote(ctx context.Context, q queues.Queue, run queues.Run) ([]Turn, Occupancy, error) {
	c := q.Capacity
	if c.MaxTurns == nil {
		return nil, Occupancy{}, nil
	}
	occ, err := s.repo.Occupancy(ctx, run.ID)
	if err != nil || !run.Open() || !platform.Deref(c.AutoPromote, true) {
		return nil, occ, err
	}
	var promoted []Turn
	for occ.Waitlisted > 0 && occ.Active < *c.MaxTurns {
		w, ok, err := s.repo.TakeWaitlisted(ctx, run.ID)
		if err != nil || !ok {
			return promoted, occ, err
		}
		w.Status, w.UpdatedAt = Waiting, s.clock.Now()
		if err := s.repo.Update(ctx, w); err != nil {
			return promoted, occ, err
		}
		if err := s.emit(ctx, w, stateChangedEvent(OpPromote, Waitlisted)); err != nil {
			return promoted, occ, err
		}
		promoted = append(promoted, w)
		occ.Waitlisted--
		occ.Active++
	}
	return promoted, occ, nil
}

// station resolves a station id for a turn of queue q: it must be one of
// the queue's stations (422 STATION_NOT_IN_QUEUE, also for a station of
// another account, so nothing about it leaks).
func (s *Service) station(ctx context.Context, q queues.Queue, id string) (queues.Station, error) {
	st, err := s.queues.GetStation(ctx, id)
	if err != nil && !platform.IsCode(err, platform.CodeNotFound) {
		return st, err
	}
	if err != nil || st.QueueID != q.ID {
		return st, platform.Unprocessable(CodeStationNotInQueue, "the station is not a station of the turn's queue",
			map[string]any{"stationId": id, "queueId": q.ID})
	}
	return st, nil
}

// free refuses a station that another called or in-service turn occupies.
func (s *Service) free(ctx context.Context, stationID, self string) error {
	other, busy, err := s.repo.AtStation(ctx, stationID)
	if err != nil {
		return err
	}
	if busy && other.ID != self {
		return platform.Conflict(CodeStationBusy, "the station is serving another turn",
			map[string]any{"stationId": stationID, "turnId": other.ID, "turnStatus": string(other.Status)})
	}
	return nil
}

// Next calls the first waiting turn of the run in line order
// (POST /queue-runs/{runId}/dispatch/next), to the station in the body or
// to none. Concurrent callers each take a different turn.
func (s *Service) Next(ctx context.Context, accountID, runID string, in CallInput) (View, error) {
	if err := in.Validate(); err != nil {
		return View{}, err
	}
	var view View
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		run, q, err := s.lockRun(ctx, accountID, runID)
		if err != nil {
			return err
		}
		if err := closedRun(run, OpNext); err != nil {
			return err
		}
		if in.StationID != nil {
			if _, err := s.station(ctx, q, *in.StationID); err != nil {
				return err
			}
			if err := s.free(ctx, *in.StationID, ""); err != nil {
				return err
			}
		}
		t, ok, err := s.repo.TakeNext(ctx, runID)
		if err != nil {
			return err
		}
		if !ok {
			return platform.Conflict(CodeNoWaitingTurns, "no turn is waiting to be called",
				map[string]any{"queueRunId": runID})
		}
		c := &change{op: OpNext, before: t, t: t, q: q, run: run, now: s.clock.Now()}
		// next calls to the station asked for, or to none: an assignment
		// made while the turn waited gives way to who actually calls it.
		c.t.StationID = in.StationID
		callTurn(c, !platform.Deref(q.DispatchFlow.CallOnNext, true) && platform.Deref(q.DispatchFlow.TrackService, true))
		if err := s.commit(ctx, c); err != nil {
			return err
		}
		view, err = s.txView(ctx, c.q, c.run, c.t, c.line)
		return err
	})
	if err != nil {
		return View{}, err
	}
	return view, nil
}

// callTurn makes c's turn called now; serve starts its service at once
// (callOnNext off), without a call to wait for and so without tolerance.
func callTurn(c *change, serve bool) {
	now := c.now
	c.t.Status, c.t.CalledAt, c.t.CallCount = Called, &now, c.t.CallCount+1
	c.t.HeldFrom = ""
	c.event = calledEvent
	if serve {
		c.t.Status, c.t.StartedAt = InService, &now
		if c.t.ArrivedAt == nil {
			c.t.ArrivedAt = &now
		}
		return
	}
	c.call = true
}

// Call calls a given turn, out of line order, or calls a called turn again
// (POST /turns/{turnId}/call). The station is the one in the body, else
// the one already assigned.
func (s *Service) Call(ctx context.Context, accountID, id string, in CallInput) (View, error) {
	if err := in.Validate(); err != nil {
		return View{}, err
	}
	return s.mutate(ctx, accountID, id, OpCall, func(ctx context.Context, c *change) error {
		if err := closedRun(c.run, OpCall); err != nil {
			return err
		}
		stationID := c.t.StationID
		if in.StationID != nil {
			if _, err := s.station(ctx, c.q, *in.StationID); err != nil {
				return err
			}
			stationID = in.StationID
		}
		if stationID != nil {
			if err := s.free(ctx, *stationID, c.t.ID); err != nil {
				return err
			}
		}
		c.t.StationID = stationID
		callTurn(c, false)
		return nil
	})
}

// AssignStation sets or clears (null) a turn's station. A turn at its
// station (called or in service) can only move to a free one.
func (s *Service) AssignStation(ctx context.Context, accountID, id string, in AssignStationInput) (View, error) {
	if err := in.Validate(); err != nil {
		return View{}, err
	}
	return s.mutate(ctx, accountID, id, OpAssignStation, func(ctx context.Context, c *change) error {
		if in.StationID.Null {
			c.t.StationID = nil
			return nil
		}
		st, err := s.station(ctx, c.q, in.StationID.Value)
		if err != nil {
			return err
		}
		if c.t.Status.AtStation() {
			if err := s.free(ctx, st.ID, c.t.ID); err != nil {
				return err
			}
		}
		c.t.StationID = &st.ID
		return nil
	})
}

// Arrive records that the customer is present. A NO_SHOW turn that arrives
// re-enters the line (tolerance.allowReentry, maxReentries).
func (s *Service) Arrive(ctx context.Context, accountID, id string) (View, error) {
	return s.mutate(ctx, accountID, id, OpArrive, func(ctx context.Context, c *change) error {
		if c.t.ArrivedAt == nil {
			now := c.now
			c.t.ArrivedAt = &now
		}
		if c.t.Status == NoShow {
			return s.reenter(ctx, c)
		}
		return nil
	})
}

// reenter puts a turn that missed its call back in the line, at the end of
// its priority, if the queue's tolerance allows another re-entry.
func (s *Service) reenter(ctx context.Context, c *change) error {
	if err := closedRun(c.run, c.op); err != nil {
		return err
	}
	tol := c.q.Tolerance
	if !platform.Deref(tol.AllowReentry, true) {
		return platform.Conflict(CodeReentryNotAllowed, "the queue does not let a turn that missed its call back in line",
			map[string]any{"turnId": c.t.ID, "status": string(c.t.Status)})
	}
	if limit := platform.Deref(tol.MaxReentries, 1); c.t.Reentries >= limit {
		return platform.Conflict(CodeReentryLimitReached, "the turn has used every re-entry the queue allows",
			map[string]any{"turnId": c.t.ID, "status": string(c.t.Status), "reentries": c.t.Reentries, "maxReentries": limit})
	}
	// A turn held by expiry still holds its place against capacity; a
	// no-show comes back as a new arrival would, behind any waitlist.
	c.t.Status = Waiting
	if !c.before.Status.Active() {
		occ, err := s.repo.Occupancy(ctx, c.run.ID)
		if err != nil {
			return err
		}
		if c.t.Status, err = admission(c.q, c.run.ID, occ); err != nil {
			return err
		}
	}
	seq, err := s.repo.NextSeq(ctx)
	if err != nil {
		return err
	}
	c.t.Seq = seq
	c.t.Reentries++
	c.t.HeldFrom, c.t.ReopenTo, c.t.FinishedAt = "", Status(""), nil
	return nil
}

// Start begins the service of a called turn (dispatchFlow.trackService).
func (s *Service) Start(ctx context.Context, accountID, id string) (View, error) {
	return s.mutate(ctx, accountID, id, OpStart, func(ctx context.Context, c *change) error {
		if !platform.Deref(c.q.DispatchFlow.TrackService, true) {
			return platform.Conflict(CodeServiceNotTracked, "the queue does not track service (dispatchFlow.trackService is off): complete the turn instead",
				map[string]any{"turnId": c.t.ID, "status": string(c.t.Status), "operation": string(OpStart)})
		}
		now := c.now
		c.t.Status, c.t.StartedAt = InService, &now
		if c.t.ArrivedAt == nil {
			c.t.ArrivedAt = &now
		}
		return nil
	})
}

// Complete finishes a turn's service. With trackService on it must have
// started; off, a called turn completes directly.
func (s *Service) Complete(ctx context.Context, accountID, id string) (View, error) {
	return s.mutate(ctx, accountID, id, OpComplete, func(ctx context.Context, c *change) error {
		if c.t.Status == Called && platform.Deref(c.q.DispatchFlow.TrackService, true) {
			return invalidTransition(c.t, OpComplete, "the queue tracks service (dispatchFlow.trackService): start the turn first")
		}
		from := c.t.StartedAt
		if from == nil {
			from = c.t.CalledAt
		}
		if from != nil {
			d := seconds(c.now.Sub(*from))
			c.t.ServiceSeconds = &d
		}
		finish(c, Completed)
		c.event = completedEvent
		return nil
	})
}

// finish ends c's turn in status, remembering where reopen brings it back
// (HeldFrom stays, for a turn cancelled while held).
func finish(c *change, status Status) {
	now := c.now
	c.t.ReopenTo = c.t.Status
	c.t.Status, c.t.FinishedAt = status, &now
}

// NoShow marks that a called turn did not come.
func (s *Service) NoShow(ctx context.Context, accountID, id string) (View, error) {
	return s.mutate(ctx, accountID, id, OpNoShow, func(ctx context.Context, c *change) error {
		finish(c, NoShow)
		return nil
	})
}

// Hold sets a waiting or called turn aside; dispatch/next skips it.
func (s *Service) Hold(ctx context.Context, accountID, id string) (View, error) {
	return s.mutate(ctx, accountID, id, OpHold, func(ctx context.Context, c *change) error {
		c.t.HeldFrom = HeldWhileWaiting
		if c.t.Status == Called {
			c.t.HeldFrom = HeldAfterCall
		}
		c.t.Status = Held
		return nil
	})
}

// Release returns a held turn to the line, or promotes a waitlisted one by
// hand.
func (s *Service) Release(ctx context.Context, accountID, id string) (View, error) {
	return s.mutate(ctx, accountID, id, OpRelease, func(ctx context.Context, c *change) error {
		if err := closedRun(c.run, OpRelease); err != nil {
			return err
		}
		if c.t.Status == Waitlisted {
			return s.promoteByHand(ctx, c)
		}
		switch c.t.HeldFrom {
		case HeldByExpiry:
			return s.reenter(ctx, c)
		case HeldAfterCall:
			// Its call was interrupted: it is the next one called, at the
			// head of its priority. Arrival numbers only grow, so the
			// negated next one sorts before every other turn's; the most
			// recently released goes first.
			seq, err := s.repo.NextSeq(ctx)
			if err != nil {
				return err
			}
			c.t.Seq = -seq
		}
		c.t.Status, c.t.HeldFrom = Waiting, ""
		return nil
	})
}

// promoteByHand moves a waitlisted turn into the line on staff's word
// (release), when the run has room under capacity.maxTurns, whatever its
// place on the waitlist.
func (s *Service) promoteByHand(ctx context.Context, c *change) error {
	if max := c.q.Capacity.MaxTurns; max != nil {
		occ, err := s.repo.Occupancy(ctx, c.run.ID)
		if err != nil {
			return err
		}
		if occ.Active >= *max {
			return platform.Conflict(CodeCapacityReached, "the queue run is at capacity",
				map[string]any{"queueRunId": c.t.RunID, "maxTurns": *max, "activeTurns": occ.Active})
		}
	}
	c.t.Status = Waiting
	return nil
}

// Cancel cancels an unfinished turn as staff (POST /turns/{turnId}/cancel).
func (s *Service) Cancel(ctx context.Context, accountID, id string) (View, error) {
	return s.CancelFor(ctx, accountID, id, "staff")
}

// CancelFor cancels an unfinished turn for a reason (turn.cancelled's
// reason): another module's cancel, such as an appointment's.
func (s *Service) CancelFor(ctx context.Context, accountID, id, reason string) (View, error) {
	return s.mutate(ctx, accountID, id, OpCancel, func(ctx context.Context, c *change) error {
		cancelTurn(c, reason)
		return nil
	})
}

func cancelTurn(c *change, reason string) {
	from := c.t.Status
	finish(c, Cancelled)
	c.event = cancelledEvent(from, reason)
	c.reason = reason
}

// Reopen brings a finished turn back to the status it finished from, with
// dispatchFlow.allowReopen and within ReopenWindow of finishing.
func (s *Service) Reopen(ctx context.Context, accountID, id string) (View, error) {
	return s.mutate(ctx, accountID, id, OpReopen, func(ctx context.Context, c *change) error {
		if !platform.Deref(c.q.DispatchFlow.AllowReopen, false) {
			return platform.Conflict(CodeReopenNotAllowed, "the queue does not allow reopening turns (dispatchFlow.allowReopen is off)",
				map[string]any{"turnId": c.t.ID, "status": string(c.t.Status)})
		}
		if c.t.FinishedAt == nil || c.now.Sub(*c.t.FinishedAt) > ReopenWindow {
			return platform.Conflict(CodeReopenWindowExpired, "a turn can be reopened only within 5 minutes of finishing",
				map[string]any{"turnId": c.t.ID, "status": string(c.t.Status), "finishedAt": c.t.FinishedAt, "windowMinutes": int(ReopenWindow / time.Minute)})
		}
		if err := closedRun(c.run, OpReopen); err != nil {
			return err
		}
		from := c.t.Status
		target := reopenTarget(c.t)
		if target.AtStation() && c.t.StationID != nil {
			if err := s.free(ctx, *c.t.StationID, c.t.ID); err != nil {
				return err
			}
		}
		if target != Held {
			c.t.HeldFrom = ""
		}
		// An undo needs no room: the turn returns to exactly where it was,
		// even past capacity.maxTurns (promotion then waits for room).
		c.t.Status = target
		if from == Completed {
			c.t.ServiceSeconds = nil
		}
		c.t.FinishedAt, c.t.ReopenTo = nil, ""
		c.event = reopenedEvent(from)
		return nil
	})
}

// reopenTarget is the status a finished turn reopens to.
func reopenTarget(t Turn) Status {
	if st := t.ReopenTo; st.Valid() && !st.Finished() {
		return st
	}
	switch {
	case t.Status == Completed && t.StartedAt != nil:
		return InService
	case t.Status == Completed || t.Status == NoShow:
		return Called
	}
	return Waiting
}

// SetPriority changes the priority of a turn not yet called. A waiting
// turn keeps its arrival, so it takes its place among the turns of its new
// priority by arrival.
func (s *Service) SetPriority(ctx context.Context, accountID, id string, in PriorityInput) (View, error) {
	if err := in.Validate(); err != nil {
		return View{}, err
	}
	return s.mutate(ctx, accountID, id, OpPriority, func(ctx context.Context, c *change) error {
		c.t.Priority = *in.Priority
		return nil
	})
}

// OnEvent promotes a reopened run's waitlist (an events.Subscriber of
// queue.opened, inside the transaction that opened the run and holds its
// lock): turns that finished while the run was closed left room that no
// other change would give to the waitlist.
func (s *Service) OnEvent(ctx context.Context, e platform.Event) error {
	if e.Name != platform.EventName[queues.QueueOpened]() || e.RunID == "" {
		return nil
	}
	run, err := s.queues.GetRunForUpdate(ctx, e.RunID)
	if err != nil {
		return err
	}
	q, err := s.queues.GetQueue(ctx, run.QueueID)
	if err != nil {
		return err
	}
	promoted, _, err := s.promote(ctx, q, run)
	if err != nil {
		return err
	}
	_, err = s.bumpLine(ctx, run.ID, LineChange{Added: keys(promoted)})
	return err
}
