package turns

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Service is the turns and dispatch use cases.
type Service struct {
	repo   Repository
	queues Queues
	uow    platform.UnitOfWork
	events platform.EventSink
	jobs   platform.JobScheduler
	clock  platform.Clock
	guards []IntakeGuard
	// members are the body members the guards declare.
	members []BodyMember
	line    *lineCache
	// followers keep records of other modules in step with the turns they
	// follow, watchers hear every change of every turn (Hooks).
	followers []Follower
	watchers  []Watcher
}

// Watched is one change a Watcher hears of.
type Watched struct {
	Queue queues.Queue
	// Before is the turn before the change, zero for a new turn.
	Before, After Turn
	Op            Operation
	// Reason is a cancellation's reason (turn.cancelled's).
	Reason string
	// Forwarded: a new turn another queue sent here (Admit, not an
	// appointment's check-in).
	Forwarded bool
	// From is the turn a forwarded or transferred turn continues (its
	// customer's), empty otherwise: watchers carry what they keep per
	// customer (a notification language) to the new turn.
	From string
	// Line is what the change did to the run's waiting line.
	Line LineChange
	// View is a new turn's view (its position and wait) when the intake
	// built it: nil otherwise.
	View *View
}

func (s *Service) watch(ctx context.Context, w Watched) error {
	for _, x := range s.watchers {
		if err := x.TurnChanged(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// Hooks are what other modules add to the turns service (none of each is
// fine): Guards are the intake rules, Followers the records that
// stand in the line as a turn and change with it, Watchers hear every
// change of every turn. modules/turns collects them from fx groups
// (ports.GroupIntakeGuards, GroupTurnFollowers, GroupTurnWatchers).
type Hooks struct {
	Guards    []IntakeGuard
	Followers []Follower
	Watchers  []Watcher
}

// NewService builds the service. Its hooks are dependencies, not
// setters: a service is whole once built, and a reader finds who guards,
// follows and watches the turns where the service is made (modules/turns).
// A hook therefore may not need this service to be built: one that
// acts on turns too is split so that the part the service calls does not
// (appointments.TurnFollower; docs/architecture.md, "Wiring without
// setters").
func NewService(repo Repository, qs Queues, uow platform.UnitOfWork, events platform.EventSink,
	jobs platform.JobScheduler, clock platform.Clock, ext Hooks) *Service {
	return &Service{repo: repo, queues: qs, uow: uow, events: events, jobs: jobs, clock: clock,
		guards: ext.Guards, members: bodyMembers(ext.Guards), line: newLineCache(),
		followers: ext.Followers, watchers: ext.Watchers}
}

// maxCreateAttempts bounds the retries of a create that lost an
// idempotency-key race: the second attempt finds the winner's turn.
const maxCreateAttempts = 3

// Create takes a turn in a run (POST /queue-runs/{runId}/turns). It
// returns the turn's view and whether it is the replay of an earlier
// create with the same idempotency key.
func (s *Service) Create(ctx context.Context, accountID, runID string, in CreateInput) (View, bool, error) {
	if err := in.validate(s.members); err != nil {
		return View{}, false, err
	}
	hash := in.requestHash(runID, s.members)
	view, replayed, err := s.createInRun(ctx, accountID, runID, in, hash)
	if err != nil {
		return View{}, false, err
	}
	if replayed != nil {
		v, err := s.View(ctx, *replayed)
		return v, true, err
	}
	return view, false, nil
}

// createInRun is Create's unit of work, run again when it lost an
// idempotency-key race or drew its number with stale settings; replayed is
// the turn an earlier create made with the key. The process's intakes of
// the run take their turns at the run's gate and may share a transaction
// (RunLocks.RunIntake): each hands the next the line it leaves, which the
// process's cache learns only once it commits.
func (s *Service) createInRun(ctx context.Context, accountID, runID string, in CreateInput, hash string) (View, *Turn, error) {
	drawAhead := true
	for attempt := 1; ; attempt++ {
		var (
			view     View
			replayed *Turn
		)
		err := s.repo.RunIntake(ctx, runID, func(ctx context.Context, carry any) (any, error) {
			view, replayed = View{}, nil // a rerun starts afresh
			cl := &chainedLine{runID: runID}
			cl.prev, _ = carry.(*lineSnapshot)
			ctx = context.WithValue(ctx, chainedLineKey{}, cl)
			var err error
			view, replayed, err = s.intake(ctx, accountID, runID, in, hash, drawAhead)
			if cl.next != nil {
				return cl.next, err
			}
			return cl.prev, err
		})
		if errors.Is(err, errRedraw) && drawAhead {
			// The number drawn ahead was spelled with settings the queue
			// no longer has, and went back with the rollback: once more,
			// drawn after the lock.
			drawAhead = false
			continue
		}
		if errors.Is(err, ErrDuplicateKey) && attempt < maxCreateAttempts {
			continue // a concurrent create with the key committed first
		}
		return view, replayed, err
	}
}

// intake is one run of createInRun's unit of work.
func (s *Service) intake(ctx context.Context, accountID, runID string, in CreateInput, hash string, drawAhead bool) (View, *Turn, error) {
	lk, err := s.lockIntake(ctx, accountID, runID, in, hash, drawAhead)
	if err != nil {
		return View{}, nil, err
	}
	if lk.replay != nil {
		return View{}, lk.replay, nil
	}
	run, q := lk.run, lk.q
	if q.Type == queues.TypeAppointment {
		return View{}, nil, platform.Unprocessable(CodeNotATurnQueue, "the queue takes appointments, not turns",
			map[string]any{"queueId": q.ID, "type": q.Type})
	}
	if err := s.checkIntake(q, run); err != nil {
		return View{}, nil, err
	}
	d, err := draftFromInput(q, in)
	if err != nil {
		return View{}, nil, err
	}
	d.key, d.hash = in.IdempotencyKey, hash
	d.drawn, d.drawnWith = lk.drawn, lk.drawnWith
	created, lc, err := s.admit(ctx, Intake{AccountID: accountID, Queue: q, Run: run, Input: in}, d)
	if err != nil {
		return View{}, nil, err
	}
	// The answer is built from what the transaction holds: nothing is
	// read again after the commit.
	view, err := s.txView(ctx, q, run, created, lc)
	if err != nil {
		return View{}, nil, err
	}
	if created.Status != Waiting {
		s.txKeepLine(ctx, runID, lc)
	}
	return view, nil, s.watch(ctx, Watched{Queue: q, After: created, Op: OpCreate, Line: lc, View: &view})
}

// chainedLine is the run's line as an intake's transaction holds it, not
// yet committed: prev as the previous intake in the same transaction left
// it (RunLocks.RunIntake's carry), next as this one leaves it. It stands in
// for the process's cache, which holds only committed lines.
type chainedLine struct {
	runID      string
	prev, next *lineSnapshot
}

type chainedLineKey struct{}

// lineInTx is the newest line of the run ctx's transaction knows: the
// cache's, or the one an earlier intake of the transaction left.
func (s *Service) lineInTx(ctx context.Context, runID string) (*lineSnapshot, *chainedLine) {
	old := s.line.get(runID)
	cl, _ := ctx.Value(chainedLineKey{}).(*chainedLine)
	if cl == nil || cl.runID != runID {
		return old, nil
	}
	if cl.prev != nil && (old == nil || cl.prev.version > old.version) {
		old = cl.prev
	}
	return old, cl
}

// errRedraw rolls back an intake whose number was drawn ahead with
// settings its queue no longer has (RunLocks.CachedQueueOfRun).
var errRedraw = errors.New("turns: the number drawn ahead used stale queue settings")

// lockedIntake is an intake's run, locked, and what came with the lock.
type lockedIntake struct {
	run queues.Run
	q   queues.Queue
	// replay is the turn an earlier create made with the key: nothing is
	// created.
	replay *Turn
	// drawn is the number drawn ahead with drawnWith, if any.
	drawn     *DrawnNumber
	drawnWith NumberDraw
}

// lockIntake locks the run of an intake and finds the turn an earlier
// create made with the key, if any, after the lock (in PostgreSQL one
// round trip, issue 16); with drawAhead the run's next number is drawn in
// it too.
func (s *Service) lockIntake(ctx context.Context, accountID, runID string, in CreateInput, hash string, drawAhead bool) (lockedIntake, error) {
	req := IntakeLock{RunID: runID, AccountID: accountID, Key: in.IdempotencyKey}
	if old, _ := s.lineInTx(ctx, runID); old != nil && s.line.shared.Load() {
		req.LineAfter = old.version
	}
	if drawAhead {
		req.Draw = s.drawAhead(runID, in)
	}
	got, err := s.repo.LockRunForIntake(ctx, req)
	if err != nil {
		return lockedIntake{}, err
	}
	if got.Replay != nil {
		t, err := replayOf(*got.Replay, *in.IdempotencyKey, hash)
		if err != nil {
			return lockedIntake{}, err
		}
		return lockedIntake{replay: &t}, nil
	}
	if got.RunErr != nil {
		return lockedIntake{}, got.RunErr
	}
	if got.Run.AccountID != accountID {
		return lockedIntake{}, platform.ForeignResource("queue run")
	}
	lk := lockedIntake{run: got.Run, q: got.Queue, drawn: got.Drawn}
	if req.Draw != nil {
		lk.drawnWith = *req.Draw
	}
	return lk, nil
}

// drawAhead is the draw to send with an intake's run lock: the numbering
// settings of the run's queue as this process last saw it, or nil when it
// has not seen the queue, the body would not make a turn of it (the
// service refuses it after the lock, and draws nothing), or the body
// carries members the guards may shape the turn with.
func (s *Service) drawAhead(runID string, in CreateInput) *NumberDraw {
	if len(in.Extensions) > 0 {
		// A member a guard declared (an access code) may give the turn
		// its own prefix once the lock is held (IntakeGuard.Shape): a guess
		// would be wrong, and rolled back, every time.
		return nil
	}
	q, ok := s.repo.CachedQueueOfRun(runID)
	if !ok || q.Type == queues.TypeAppointment {
		return nil
	}
	d, err := draftFromInput(q, in)
	if err != nil {
		return nil
	}
	now := s.clock.Now()
	return &NumberDraw{Period: numberingPeriod(q, now), Prefix: d.prefix, Padding: q.TurnPadding,
		Since: now.Add(-ReopenWindow)}
}

// replayOf is the replay of t, the turn made with key: itself with the
// same request, IDEMPOTENCY_KEY_REUSED with another.
func replayOf(t Turn, key, hash string) (Turn, error) {
	if t.RequestHash != hash {
		return Turn{}, platform.Conflict(CodeIdempotencyKeyReused,
			"the idempotencyKey was already used with a different request",
			map[string]any{"idempotencyKey": key, "turnId": t.ID})
	}
	return t, nil
}

// lockRun loads and locks a run of the account, and its queue. The run's
// lock is the first every use case that changes the run's turns takes
// (docs/turns.md, the lock order).
func (s *Service) lockRun(ctx context.Context, accountID, runID string) (queues.Run, queues.Queue, error) {
	run, q, err := s.repo.LockRunWithQueue(ctx, runID)
	if err == nil && run.AccountID != accountID {
		return run, queues.Queue{}, platform.ForeignResource("queue run")
	}
	return run, q, err
}

// checkIntake applies the run's state and the queue's schedule to a new
// turn.
func (s *Service) checkIntake(q queues.Queue, run queues.Run) error {
	if !run.Open() {
		return platform.Conflict(CodeQueueClosed, "the queue run is closed",
			map[string]any{"queueRunId": run.ID, "status": run.Status})
	}
	if !run.IntakeOpen {
		return platform.Conflict(CodeIntakeClosed, "the queue run does not take new turns; its pending turns are still served",
			map[string]any{"queueRunId": run.ID})
	}
	if !platform.Deref(q.Schedule.AllowOutsideHours, false) && !openAt(q.Schedule, q.Zone(), s.clock.Now()) {
		return platform.Conflict(CodeOutsideHours, "the queue takes turns only during its opening hours",
			map[string]any{"queueId": q.ID, "timezone": q.Zone().String()})
	}
	return nil
}

// draft is a turn about to be admitted.
type draft struct {
	peopleCount    int
	phone          *string
	notifyWhatsapp bool
	formResponse   map[string]string
	priority       queues.Priority
	prefix         string
	// number and code, when set, are kept from elsewhere (a forwarded turn
	// with keepNumber) instead of drawn from the run's counter.
	number int
	code   string
	key    *string
	hash   string
	// appointmentID is set for the turn of a checked-in appointment: its
	// seat was booked, so capacity does not apply.
	appointmentID *string
	// drawn, when set, is the run's next number drawn ahead with the
	// settings drawnWith (LockRunForIntake); number checks them against the
	// queue's.
	drawn     *DrawnNumber
	drawnWith NumberDraw
}

// draftFromInput checks the body against the queue and derives the turn's
// priority and prefix from the chosen options.
func draftFromInput(q queues.Queue, in CreateInput) (draft, error) {
	if !q.WhatsappCapture && (in.Phone != nil || platform.Deref(in.NotifyWhatsapp, false)) {
		return draft{}, platform.Unprocessable(CodeWhatsappCaptureDisabled,
			"the queue does not capture a phone (whatsappCapture is off)", map[string]any{"queueId": q.ID})
	}
	var v platform.Validator
	q.PreAttention.CheckAnswers(&v, "formResponse", in.FormResponse)
	if err := v.Err(); err != nil {
		return draft{}, err
	}
	d := draft{
		peopleCount:    platform.Deref(in.PeopleCount, 1),
		phone:          in.Phone,
		notifyWhatsapp: platform.Deref(in.NotifyWhatsapp, false),
		formResponse:   in.FormResponse,
		priority:       queues.PriorityNormal,
		prefix:         q.TurnPrefix,
	}
	if d.formResponse == nil {
		d.formResponse = map[string]string{}
	}
	applyOptions(q, &d)
	return d, nil
}

// applyOptions gives the turn the prefix and priority of its chosen
// options: the most urgent priority among them, and the prefix of the
// first question (in the queue's order) whose chosen option has one.
func applyOptions(q queues.Queue, d *draft) {
	prefixSet := false
	for _, qu := range q.PreAttention.Questions {
		if qu.ID == nil || qu.Type == nil || *qu.Type != queues.QuestionChoice {
			continue
		}
		answer, ok := d.formResponse[*qu.ID]
		if !ok {
			continue
		}
		for _, o := range qu.Options {
			if o.Label == nil || *o.Label != answer {
				continue
			}
			if o.Prefix != nil && *o.Prefix != "" && !prefixSet {
				d.prefix, prefixSet = *o.Prefix, true
			}
			if o.Priority != nil && o.Priority.Rank() < d.priority.Rank() {
				d.priority = *o.Priority
			}
		}
	}
}

// admit stores a new turn in a run the caller has locked: capacity, the
// intake guards, its number, the turn.created event, the line. Used by
// Create and Admit. It returns the line change it recorded.
func (s *Service) admit(ctx context.Context, in Intake, d draft) (Turn, LineChange, error) {
	for _, g := range s.guards {
		if err := g.Check(ctx, in); err != nil {
			return Turn{}, LineChange{}, err
		}
	}
	if err := s.shape(ctx, in, &d); err != nil {
		return Turn{}, LineChange{}, err
	}
	// Room a finished turn left, and not yet given to the waitlist, goes to
	// the waitlist first: nobody passes those waiting for room. A booked
	// appointment's turn needs no room: its seat was taken at booking.
	var promoted []Turn
	status := Waiting
	if d.appointmentID == nil {
		var occ Occupancy
		var err error
		if promoted, occ, err = s.promote(ctx, in.Queue, in.Run); err != nil {
			return Turn{}, LineChange{}, err
		}
		if status, err = admission(in.Queue, in.Run.ID, occ); err != nil {
			return Turn{}, LineChange{}, err
		}
	}
	now := s.clock.Now()
	number, code, seq, err := s.number(ctx, in, d, now)
	if err != nil {
		return Turn{}, LineChange{}, err
	}
	if seq == 0 {
		if seq, err = s.repo.NextSeq(ctx); err != nil {
			return Turn{}, LineChange{}, err
		}
	}
	t := Turn{
		ID: platform.NewID(platform.PrefixTurn), AccountID: in.AccountID, QueueID: in.Queue.ID, RunID: in.Run.ID,
		Number: number, DisplayCode: code, Status: status, Priority: d.priority, Seq: seq,
		PeopleCount: d.peopleCount, Phone: d.phone, NotifyWhatsapp: d.notifyWhatsapp, FormResponse: d.formResponse,
		IdempotencyKey: d.key, RequestHash: d.hash, CreatedAt: now, UpdatedAt: now, AppointmentID: d.appointmentID,
	}
	if err := s.repo.Create(ctx, t); err != nil {
		return Turn{}, LineChange{}, err
	}
	for _, g := range s.guards {
		if err := g.Admitted(ctx, in, t); err != nil {
			return Turn{}, LineChange{}, err
		}
	}
	if err := s.emit(ctx, t, createdEvent); err != nil {
		return Turn{}, LineChange{}, err
	}
	if err := s.scheduleSLA(ctx, in.Queue, t); err != nil {
		return Turn{}, LineChange{}, err
	}
	lc := LineChange{Added: keys(promoted)}
	if status == Waiting {
		lc.Added = append(lc.Added, t.Key())
	}
	if d.drawn != nil {
		// The draw made the line's next version: the change is recorded
		// under it, even an empty one (a WAITLISTED turn).
		lc.Version = d.drawn.LineVersion
	}
	lc, err = s.bumpLine(ctx, t.RunID, lc)
	return t, lc, err
}

// number gives a new turn its number and display code: those it keeps (a
// forward with keepNumber) unless the code is in use in the run; else the
// run's next number, skipping any whose code is in use (a kept one, or
// yesterday's after a daily restart). In use counts the turns that may
// still come back (a no-show's re-entry, a reopen), so a display code
// never repeats among a run's unfinished turns, then or later.
func (s *Service) number(ctx context.Context, in Intake, d draft, now time.Time) (int, string, int64, error) {
	since := now.Add(-ReopenWindow)
	if d.code != "" {
		held, err := s.repo.CodeInUse(ctx, in.Run.ID, d.code, since)
		if err != nil || !held {
			return d.number, d.code, 0, err
		}
	}
	period := numberingPeriod(in.Queue, now)
	var seq int64
	if d.drawn != nil {
		w := d.drawnWith
		if w.Period != period || w.Prefix != d.prefix || w.Padding != in.Queue.TurnPadding {
			return 0, "", 0, errRedraw
		}
		if !d.drawn.CodeInUse {
			return d.drawn.Number, displayCode(d.prefix, in.Queue.TurnPadding, d.drawn.Number), d.drawn.Seq, nil
		}
		// Its code is held: the next numbers, one at a time, as below.
		seq = d.drawn.Seq
	} else {
		// The usual case in one call: the next number, whether its code is
		// free, and the arrival seq.
		n, held, drawn, err := s.repo.DrawNumber(ctx, in.Run.ID, period, d.prefix, in.Queue.TurnPadding, since)
		if err != nil {
			return 0, "", 0, err
		}
		if !held {
			return n, displayCode(d.prefix, in.Queue.TurnPadding, n), drawn, nil
		}
		seq = drawn
	}
	for {
		n, err := s.repo.NextNumber(ctx, in.Run.ID, period)
		if err != nil {
			return 0, "", 0, err
		}
		code := displayCode(d.prefix, in.Queue.TurnPadding, n)
		held, err := s.repo.CodeInUse(ctx, in.Run.ID, code, since)
		if err != nil {
			return 0, "", 0, err
		}
		if !held {
			return n, code, seq, nil
		}
	}
}

// admission decides how a new turn enters a run, given the run's occupancy
// once its waitlist has been promoted as far as room allows. A waitlist is
// a queue: while anyone is WAITLISTED a new turn joins them there (with
// autoPromote off, until staff release them). Otherwise the turn is
// WAITING under capacity.maxTurns active turns (or without a limit),
// WAITLISTED when the run is full and waitlistEnabled, else refused with
// CAPACITY_REACHED.
func admission(q queues.Queue, runID string, occ Occupancy) (Status, error) {
	c := q.Capacity
	if c.MaxTurns == nil {
		return Waiting, nil
	}
	waitlist := platform.Deref(c.WaitlistEnabled, false)
	switch {
	case waitlist && occ.Waitlisted > 0:
		return Waitlisted, nil
	case occ.Active < *c.MaxTurns:
		return Waiting, nil
	case waitlist:
		return Waitlisted, nil
	}
	return "", platform.Conflict(CodeCapacityReached, "the queue run is at capacity",
		map[string]any{"queueRunId": runID, "maxTurns": *c.MaxTurns, "activeTurns": occ.Active})
}

// bumpLine records a change of the run's waiting line, if there is one
// or its version was drawn already (lc.Version, DrawnNumber.LineVersion),
// and returns it with its version (0 when there was none).
func (s *Service) bumpLine(ctx context.Context, runID string, lc LineChange) (LineChange, error) {
	if len(lc.Added) == 0 && len(lc.Removed) == 0 && lc.Version == 0 {
		return LineChange{}, nil
	}
	v, err := s.repo.BumpLine(ctx, runID, lc)
	lc.Version = v
	return lc, err
}

// keys returns the line keys of ts.
func keys(ts []Turn) []LineKey {
	out := make([]LineKey, len(ts))
	for i, t := range ts {
		out[i] = t.Key()
	}
	return out
}

// Admission is a turn another module puts in a run: a turn forwarded
// through a connected-queue link.
type Admission struct {
	PeopleCount    int
	Phone          *string
	NotifyWhatsapp bool
	FormResponse   map[string]string
	// Priority defaults to NORMAL.
	Priority queues.Priority
	// Number and DisplayCode, when DisplayCode is set, are kept (a link's
	// keepNumber) instead of taking the run's next number.
	Number      int
	DisplayCode string
	// AppointmentID makes the turn a checked-in appointment's place in the
	// line (a HYBRID queue): it is admitted whatever the run's intake and
	// capacity, since its seat was booked, and the appointment follows it.
	AppointmentID *string
	// From is the turn this one continues (a forward's or transfer's
	// source), told to the watchers.
	From string
}

// Admit creates a turn in a run of the account from another module, in the
// caller's unit of work when ctx carries one (forwarding completes the
// source turn and admits its successor in one transaction). The run must be
// open with its intake open, and capacity applies; the schedule and the
// destination's questions do not, since the customer is already inside.
func (s *Service) Admit(ctx context.Context, accountID, runID string, a Admission) (Turn, error) {
	var t Turn
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		run, q, err := s.lockRun(ctx, accountID, runID)
		if err != nil {
			return err
		}
		if !run.Open() {
			return platform.Conflict(CodeQueueClosed, "the queue run is closed", map[string]any{"queueRunId": run.ID})
		}
		if !run.IntakeOpen && a.AppointmentID == nil {
			return platform.Conflict(CodeIntakeClosed, "the queue run does not take new turns", map[string]any{"queueRunId": run.ID})
		}
		d := draft{peopleCount: max(a.PeopleCount, 1), phone: a.Phone, notifyWhatsapp: a.NotifyWhatsapp,
			formResponse: a.FormResponse, priority: a.Priority, prefix: q.TurnPrefix, number: a.Number, code: a.DisplayCode,
			appointmentID: a.AppointmentID}
		if !d.priority.Valid() {
			d.priority = queues.PriorityNormal
		}
		if d.formResponse == nil {
			d.formResponse = map[string]string{}
		}
		var lc LineChange
		if t, lc, err = s.admit(ctx, Intake{AccountID: accountID, Queue: q, Run: run, Forwarded: true}, d); err != nil {
			return err
		}
		return s.watch(ctx, Watched{Queue: q, After: t, Op: OpCreate, Forwarded: a.AppointmentID == nil, From: a.From, Line: lc})
	})
	return t, err
}

// Turn returns a turn of the account as stored.
func (s *Service) Turn(ctx context.Context, accountID, id string) (Turn, error) {
	t, err := s.repo.Get(ctx, id)
	if err != nil {
		return Turn{}, err
	}
	if t.AccountID != accountID {
		return Turn{}, platform.ForeignResource("turn")
	}
	return t, nil
}

// Get returns the full view of a turn (GET /turns/{turnId}).
func (s *Service) Get(ctx context.Context, accountID, id string) (View, error) {
	t, vc, err := s.repo.GetForView(ctx, id)
	if err != nil {
		return View{}, err
	}
	if t.AccountID != accountID {
		return View{}, platform.ForeignResource("turn")
	}
	return s.viewOf(ctx, t, vc)
}

// run returns a run of the account.
func (s *Service) run(ctx context.Context, accountID, runID string) (queues.Run, error) {
	run, err := s.queues.GetRun(ctx, runID)
	if err != nil {
		return run, err
	}
	if run.AccountID != accountID {
		return run, platform.ForeignResource("queue run")
	}
	return run, nil
}

// List pages through a run's turns, by creation, optionally of some
// statuses only.
func (s *Service) List(ctx context.Context, accountID, runID string, f ListFilter, page platform.PageRequest) (platform.Page[View], error) {
	run, err := s.run(ctx, accountID, runID)
	if err != nil {
		return platform.Page[View]{}, err
	}
	items, err := s.repo.List(ctx, runID, f.Statuses, page)
	if err != nil {
		return platform.Page[View]{}, err
	}
	return s.page(ctx, run, items, page.Limit)
}

// Arrivals pages through the run's unfinished turns that have arrived.
func (s *Service) Arrivals(ctx context.Context, accountID, runID string, page platform.PageRequest) (platform.Page[View], error) {
	run, err := s.run(ctx, accountID, runID)
	if err != nil {
		return platform.Page[View]{}, err
	}
	items, err := s.repo.ListArrivals(ctx, runID, page)
	if err != nil {
		return platform.Page[View]{}, err
	}
	return s.page(ctx, run, items, page.Limit)
}

func (s *Service) page(ctx context.Context, run queues.Run, items []Turn, limit int) (platform.Page[View], error) {
	p := platform.PageOf(items, limit, func(t Turn) string { return t.ID })
	q, err := s.queues.GetQueue(ctx, run.QueueID)
	if err != nil {
		return platform.Page[View]{}, err
	}
	vb, err := s.viewer(ctx, q)
	if err != nil {
		return platform.Page[View]{}, err
	}
	vb.setOpen(run.ID, run.Open())
	out := platform.Page[View]{Items: make([]View, len(p.Items)), Next: p.Next}
	for i, t := range p.Items {
		if out.Items[i], err = vb.view(ctx, t); err != nil {
			return platform.Page[View]{}, err
		}
	}
	return out, nil
}

// closedRun refuses an operation that would put a turn in line or call it
// in a closed run.
func closedRun(run queues.Run, op Operation) error {
	if run.Open() {
		return nil
	}
	return platform.Conflict(CodeQueueClosed, "the queue run is closed; "+strings.ReplaceAll(string(op), "-", " ")+" needs an open run",
		map[string]any{"queueRunId": run.ID, "operation": string(op)})
}

// since returns d in seconds.
func seconds(d time.Duration) float64 { return d.Seconds() }
