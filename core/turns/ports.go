package turns

import (
	"context"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Every port of the module (docs/architecture.md, "Ports").

// IntakeGuard is a rule another module adds to intake. Its methods run
// inside the unit of work of the intake or change, with its context, so
// what they write commits or rolls back with it; an error refuses it.
// A guard embeds GuardBase and writes only the methods it needs: every
// facet is a method of the one interface, so the service calls each guard
// alike and nothing asks at run time what a guard can do.
//
// Check runs after the run, schedule and answers were checked, before
// capacity (a refused code never takes a place in the run), and before the
// turn takes its number. Shape runs after every guard's Check passed and
// before the turn takes its number: it may give the turn its prefix and
// priority (an access code does); shapers apply in the order of the
// guards, a later one overriding an earlier one's fields. Admitted runs
// once the turn is stored.
//
// Returning rules on a finished turn coming back into the run (a
// no-show's re-entry, a reopen): a rule on the turns one customer may hold
// at once (access codes' oneActiveTurnPerCode) must hold then as it did at
// intake. It runs after the run and the turn were locked.
//
// BodyMembers are the members of the create body the guard declares.
type IntakeGuard interface {
	Check(ctx context.Context, in Intake) error
	Shape(ctx context.Context, in Intake) (Shaping, error)
	Admitted(ctx context.Context, in Intake, t Turn) error
	Returning(ctx context.Context, q queues.Queue, t Turn) error
	BodyMembers() []BodyMember
}

// Repository stores turns and the per-run counters that number and order
// them. Methods called with a unit of work's context join its transaction;
// the ForUpdate and Take methods lock what they return until it ends.
type Repository interface {
	// Create stores a new turn; ErrDuplicateKey when its idempotency key is
	// taken in the account. Inside a unit of work the write may be sent
	// with the unit's next statement (postgres mode batches them), so the
	// error can come from a later call or from the unit itself: callers
	// look for it in the unit's error, never decide on Create's alone.
	Create(ctx context.Context, t Turn) error
	Get(ctx context.Context, id string) (Turn, error)
	GetForUpdate(ctx context.Context, id string) (Turn, error)
	// Update stores every field of a turn. A turn put at a station that
	// another called or in-service turn occupies is refused with
	// STATION_BUSY (the database's guarantee behind the service's check).
	Update(ctx context.Context, t Turn) error
	// ByIdempotencyKey finds the account's turn created with key
	// (platform NotFound when none).
	ByIdempotencyKey(ctx context.Context, accountID, key string) (Turn, error)

	// NextNumber increments the run's number counter and returns the new
	// number, in the caller's transaction: a rolled-back intake gives its
	// number back, so committed numbers have no gap. A run has one counter,
	// tagged with the numbering period it counts in ("" for the run's
	// whole life, or a local day). A day that follows another day restarts
	// the count at 1; a switch between "" and a day carries the count on,
	// so switching resetNumberingDaily neither restarts numbering in the
	// middle of a day nor rewinds it to an older count.
	NextNumber(ctx context.Context, runID, period string) (int, error)
	// CodeInUse reports whether a turn of the run that is, or may come
	// back, in the line shows code: an unfinished turn, a NO_SHOW (its
	// customer may still arrive and re-enter), or a turn that finished
	// after since (it may still be reopened).
	CodeInUse(ctx context.Context, runID, code string, since time.Time) (bool, error)
	// NextSeq returns a new arrival sequence number, increasing over time.
	NextSeq(ctx context.Context) (int64, error)

	// TakeNext locks and returns the first WAITING turn of the run in line
	// order (priority rank, then seq), skipping turns that concurrent
	// transactions hold; false when there is none.
	TakeNext(ctx context.Context, runID string) (Turn, bool, error)
	// TakeWaitlisted is TakeNext for the WAITLISTED turns.
	TakeWaitlisted(ctx context.Context, runID string) (Turn, bool, error)
	// Occupancy counts the run's active (WAITING, HELD, CALLED,
	// IN_SERVICE) and WAITLISTED turns.
	Occupancy(ctx context.Context, runID string) (Occupancy, error)
	// AtStation returns the CALLED or IN_SERVICE turn at the station;
	// false when the station is free.
	AtStation(ctx context.Context, stationID string) (Turn, bool, error)

	// List returns up to page.Limit+1 turns of the run after page.After,
	// ordered by id, only those in statuses when it is not empty.
	List(ctx context.Context, runID string, statuses []Status, page platform.PageRequest) ([]Turn, error)
	// ListArrivals is List for the unfinished turns that have arrived.
	ListArrivals(ctx context.Context, runID string, page platform.PageRequest) ([]Turn, error)

	// BumpLine increments the run's line version and records what changed
	// under the new version, in the caller's transaction. Every use case
	// that changes the set of WAITING turns or their order calls it, as its
	// last write, so a reader that sees the version also sees the change.
	// It returns the new version. A change whose Version is set carries
	// the version its intake's number was drawn with
	// (DrawnNumber.LineVersion): it is recorded under that version, which
	// the draw already made, and not bumped again; an empty change too.
	BumpLine(ctx context.Context, runID string, change LineChange) (int64, error)
	// LineVersion returns the run's line version (0 before any change).
	LineVersion(ctx context.Context, runID string) (int64, error)
	// WaitingLine returns the line version and the keys of the WAITING
	// turns in line order, both read from one snapshot.
	WaitingLine(ctx context.Context, runID string) (int64, []LineKey, error)
	// LineChanges returns the recorded changes of the run's line with
	// versions in (after, upTo], in version order. Old changes are pruned,
	// so fewer than upTo-after may come back: the reader then reloads the
	// whole line.
	LineChanges(ctx context.Context, runID string, after, upTo int64) ([]LineChange, error)

	// RecentServiceSeconds returns the service times of the queue's last n
	// completed turns, newest first.
	RecentServiceSeconds(ctx context.Context, queueID string, n int) ([]float64, error)

	// DrawNumber does in one call what an intake would ask one call at a
	// time: NextNumber, CodeInUse of the code the number makes (prefix,
	// then the number zero-padded to padding digits, as displayCode), and
	// NextSeq (PostgreSQL: one round trip).
	DrawNumber(ctx context.Context, runID, period, prefix string, padding int, since time.Time) (n int, codeInUse bool, seq int64, err error)

	RunLocks
	Views
	PhoneCounter
	Marker

	// PruneLineChanges deletes the line changes of runs closed before before
	// (those of open runs are pruned per run as the line moves), at most limit
	// rows, in one short transaction of its own (not the caller's), and
	// reports how many: the module's retention task (ports.RetentionTask)
	// calls it again while it deletes a full batch.
	PruneLineChanges(ctx context.Context, before time.Time, limit int) (int, error)
}

// RunLocks are the run locks the use cases take before they change a run's
// turns (docs/turns.md, the lock order), each with what the use case reads
// with it: one round trip in PostgreSQL (issue 16), the store's lock and
// its tables in memory. Every backend implements all of them; where one has
// nothing to add (memory's gate, its process cache) the method says so.
type RunLocks interface {
	// EnterRun is a turnstile in front of the run's lock, in the process:
	// an intake enters it before its unit of work and leaves it after, so
	// the process's intakes of one run wait for each other holding
	// nothing. The store's lock stays what orders them (across processes
	// too); the gate only moves the waiting out of the store, where a
	// waiter holds a connection and, in PostgreSQL, a snapshot that keeps
	// the run's hot rows' old versions from being cleaned up. A store whose
	// unit of work waits holding nothing (memory) lets every caller in at
	// once. It waits for the gate or for ctx to end; leave opens it for
	// the next.
	EnterRun(ctx context.Context, runID string) (leave func(), err error)
	// RunIntake runs fn, an intake of the run, as a unit of work behind
	// the run's gate (EnterRun). A store may run the process's successive
	// intakes of one run in one transaction, committed once (PostgreSQL's
	// group commit, docs/scaling.md): fn then runs after the earlier
	// members' writes and sees them, its AfterCommit hooks run only once
	// that commit succeeded, a failure of fn is fn's alone (its writes are
	// undone, the others' stay), and RunIntake returns only with the
	// commit's outcome. carry is what the transaction's previous member
	// returned (nil for its first): the service hands its line, not yet
	// committed, on with it. fn must be safe to run again, as Do's. A
	// store without group commit (memory) runs each in a unit of its own.
	RunIntake(ctx context.Context, runID string, fn func(ctx context.Context, carry any) (any, error)) error
	// LockRunWithQueue locks the run as Queues.GetRunForUpdate does and
	// reads its queue.
	LockRunWithQueue(ctx context.Context, runID string) (queues.Run, queues.Queue, error)
	// LockRunOfTurn locks the run of the turn (not the turn) and returns
	// the turn's account, the run and its queue; platform NotFound when
	// the turn does not exist.
	LockRunOfTurn(ctx context.Context, turnID string) (account string, run queues.Run, q queues.Queue, err error)
	// CachedQueueOfRun is the queue of the run as this process last read
	// it, without a round trip; false when it has none (always, for a
	// store with no process cache: memory). It may be stale: an intake
	// draws a number ahead with it (IntakeLock.Draw) and the service
	// checks the settings against the queue the lock read, giving a stale
	// draw back by rolling the unit of work back (errRedraw).
	CachedQueueOfRun(runID string) (queues.Queue, bool)
	// LockRunForIntake locks the run and reads its queue as
	// LockRunWithQueue, then, after the lock, finds the account's turn
	// made with the key and draws the number asked. RunErr is the lock's
	// failure (the run not found), kept apart so that a key already used
	// answers as a replay whatever the run.
	LockRunForIntake(ctx context.Context, in IntakeLock) (IntakeLocked, error)
}

// Views are the reads of a turn's view (position.go).
type Views interface {
	// GetForView reads a turn together with everything its view needs
	// (GET /turns/{id}), from one snapshot.
	GetForView(ctx context.Context, id string) (Turn, ViewContext, error)
	// QueueForView reads a queue's stations and latest service times (up
	// to ServiceSamples, newest first): the answer of a change costs one
	// read inside its transaction.
	QueueForView(ctx context.Context, queueID string) ([]queues.Station, []float64, error)
}

// Queues is what this module needs of the queues module's storage; the
// queues.Repository implementations provide it.
type Queues interface {
	GetQueue(ctx context.Context, id string) (queues.Queue, error)
	GetRun(ctx context.Context, id string) (queues.Run, error)
	// GetRunForUpdate locks the run. Every use case that changes a run's
	// turns takes it first (docs/turns.md, the lock order), so intake,
	// dispatch, promotion and the capacity rules of a run happen one at a
	// time.
	GetRunForUpdate(ctx context.Context, id string) (queues.Run, error)
	GetStation(ctx context.Context, id string) (queues.Station, error)
	ListStations(ctx context.Context, queueID string) ([]queues.Station, error)
}

// Follower keeps another module's record in step with a turn that stands
// for it: the appointments module follows the turn of a checked-in HYBRID
// appointment. TurnChanged runs inside the unit of work of every change of
// such a turn (Turn.AppointmentID set), after the turn is stored and with
// its run and the turn locked; an error refuses the change.
type Follower interface {
	TurnChanged(ctx context.Context, before, after Turn) error
}

// PhoneCounter counts a phone's served turns in a queue (offers' points).
type PhoneCounter interface {
	CountServedByPhone(ctx context.Context, queueID, phone string) (int, error)
}

// Marker records that something happened to a turn, once: MarkOnce
// reports whether this call recorded kind (false: it was recorded
// before). The SLA job needs it so that a job run twice raises its event
// once.
type Marker interface {
	MarkOnce(ctx context.Context, turnID, kind string, at time.Time) (bool, error)
}

// Watcher hears every change of every turn, inside the change's unit of
// work, after the turn is stored: the notifications module decides its
// messages there, so they commit with the change. An error refuses the
// change. A watcher must be cheap for the turns it has nothing to do
// with: it runs on every change.
type Watcher interface {
	TurnChanged(ctx context.Context, w Watched) error
}
