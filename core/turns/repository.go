package turns

import (
	"errors"
	"time"

	"github.com/qms-dev/qms/core/queues"
)

// ErrDuplicateKey is what Repository.Create returns when another turn of
// the account already holds the idempotency key (a concurrent create that
// committed first). The service then answers with that turn.
var ErrDuplicateKey = errors.New("turns: idempotency key already used")

// Occupancy is how many of a run's turns count against its capacity
// (Active) and how many wait for room (Waitlisted).
type Occupancy struct {
	Active     int
	Waitlisted int
}

// LineChange is what one committed change did to a run's waiting line:
// keys that left it and keys that joined it. Version is set by BumpLine,
// unless the change's number was drawn with its version
// (DrawnNumber.LineVersion): then the caller sets it. Reset marks a change
// the keys do not describe; a reader reloads the line.
type LineChange struct {
	Version int64
	Removed []LineKey
	Added   []LineKey
	Reset   bool
}

// IntakeLock is what LockRunForIntake is asked.
type IntakeLock struct {
	RunID, AccountID string
	// Key, when set, is looked up among the account's turns, after the
	// lock, so a create with the key that committed while this one waited
	// for the run is found.
	Key *string
	// Draw, when set, draws the run's next number as DrawNumber does,
	// after the lock, and only when the run is the account's and no turn
	// has Key (a replay or a refusal keeps the counter as it was).
	Draw *NumberDraw
	// LineAfter, when above zero, is the version of the run's line this
	// process has cached: the line changes after it that committed before
	// the lock are read after the lock, in its round trip, so the answer's
	// patch (LineChanges) needs no round trip of its own while the run is
	// locked, when other processes have changed the line (issue 30).
	LineAfter int64
}

// NumberDraw is a number drawn with a queue's numbering settings.
type NumberDraw struct {
	Period, Prefix string
	Padding        int
	// Since is the start of the reopen window: a turn finished after it
	// still holds its display code.
	Since time.Time
}

// IntakeLocked is what LockRunForIntake found.
type IntakeLocked struct {
	Run    queues.Run
	Queue  queues.Queue
	RunErr error
	// Replay is the account's turn made with the key, if any.
	Replay *Turn
	// Drawn is the number Draw drew, if it was drawn.
	Drawn *DrawnNumber
}

// DrawnNumber is a number drawn by LockRunForIntake.
type DrawnNumber struct {
	Number    int
	CodeInUse bool
	Seq       int64
	// LineVersion, when above zero, is the run's next line version, made
	// by the draw together with the number (a store may keep both on one
	// row, PostgreSQL does): the intake records its line change under it
	// (BumpLine with the change's Version set), an empty change when its
	// turn does not join the line, since readers patch a cached line only
	// through consecutive versions. The version goes back with the number
	// when the intake rolls back. Zero: the store did not bump ahead, and
	// BumpLine bumps as for any change.
	LineVersion int64
}
