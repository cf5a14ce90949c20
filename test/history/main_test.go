// Package history is a Jepsen-style history checker for qms (issue 10,
// item 2): several concurrent clients send a random mix of every queue
// operation to the processes of a backend, every request and answer is
// recorded, and the history and quiescent snapshots of the state are
// checked against the line rules (docs/turns.md, docs/workflow.md,
// docs/appointments.md and the rules of issue 10, item 3).
//
// Backends: the memory adapter in process, and three `qms serve`
// processes (the binary, built by the test) on one fresh PostgreSQL
// database from pgtest (skipped without a server, failed with CI=true).
//
// The workload (setup_test.go) has four queues: A without capacity, B with
// maxTurns, a waitlist and autoPromote, C with maxTurns, a waitlist without
// autoPromote, tolerance grace 0 and one active turn per access code, D for
// appointments; A forwards completed turns to B keeping their number, B to
// C by hand, and transfers turns to C. Customers also join A on its join
// page, ask for help and leave on their ticket pages; staff make ticket
// links (mostly for the head of a line) and answer help requests; A's SLA
// jobs mark every turn at once. Each of those writes a row about a waiting
// turn, which must never hide it from next (checkNextOrder). Clients (workload_test.go) run in bursts; between bursts the
// runs are reopened, jobs settle and the state is checked (quiesce_test.go):
// stations, capacity, waitlist, display codes and numbers, positions on
// every process against the order sequential next calls take, a closed-run
// probe. At the end the history is checked (final_test.go): answers, creates,
// last changes, calls, updatedAt, waitlist order, access codes, events from
// the log, slots, and the server logs. Each check is counted (checker_test.go)
// and the table printed, with the first failures of each rule spelled out.
//
// Two rules are read strictly and may need a decision in the server: a run
// opened again promotes its waitlisted turns when there is room (the
// autoPromote check runs right after the runs are reopened), and numbering
// never restarts within a run (a run across a local midnight with
// resetNumberingDaily on would be reported).
//
// The short run (about 30 s per backend) is part of `go test ./...`; a long
// run is `go test ./test/history -run History -history.duration=5m` (or
// `make history`). -history.clients and -history.seed change the load.
package history

import (
	"flag"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/pgtest"
)

var (
	duration = flag.Duration("history.duration", 0,
		"load time per backend (0: the short run of the normal suite)")
	clientsFlag = flag.Int("history.clients", 10, "concurrent clients")
	seedFlag    = flag.Int64("history.seed", 0, "random seed (0: from the clock; printed)")
)

// shortLoad is the load time of the short run: three bursts of about 5 s,
// plus setup, quiescent checks and drains, keep a backend near 25 s.
const shortLoad = 15 * time.Second

// burstLength is the length of one burst of concurrent load between two
// quiescent checks: 5 s, longer in a long run so that it has about 20
// quiescent points (each one reads the whole state and history so far).
func burstLength(total time.Duration) time.Duration {
	return max(5*time.Second, total/20)
}

func loadTime() time.Duration {
	if *duration > 0 {
		return *duration
	}
	return shortLoad
}

// TestMain removes the Postgres container pgtest may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }
