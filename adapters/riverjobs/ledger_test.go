package riverjobs

import (
	"testing"
	"time"
)

// TestLedgerKeepsFinishedJobsWhileTheDatabaseIsAway: a finished job's
// completion may wait in River's completer for as long as the database is
// away, so its ID is kept while the sweep fails and for orphanMemory after
// the database answers again; then it is forgotten.
func TestLedgerKeepsFinishedJobsWhileTheDatabaseIsAway(t *testing.T) {
	l := newWorkLedger()
	l.begin(1)
	if !l.known([]int64{1})[1] {
		t.Fatal("a running job is not known")
	}
	l.end(1)
	l.finished[1] = time.Now().Add(-3 * orphanMemory) // finished long ago
	l.answered(false)                                 // and the database is away since
	if !l.known([]int64{1})[1] {
		t.Fatal("a finished job was forgotten while the database was away")
	}
	l.answered(true)
	if !l.known([]int64{1})[1] {
		t.Fatal("a finished job was forgotten as soon as the database answered again")
	}
	l.healthySince = time.Now().Add(-2 * orphanMemory)
	if l.known([]int64{1})[1] {
		t.Fatal("a job finished long before a long healthy spell is still known")
	}
	if len(l.finished) != 0 {
		t.Fatalf("%d finished IDs kept", len(l.finished))
	}
}
