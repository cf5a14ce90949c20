// Package history is a Jepsen-style history checker for qms: several
// concurrent clients send a random mix of every queue operation to one or
// more processes, every request and answer is recorded, and afterwards the
// history and quiescent snapshots of the state are checked against the line
// rules (docs/turns.md, docs/workflow.md, docs/appointments.md and issue 10).
//
// The short run (about 25 s per backend) is part of `go test ./...`; a long
// run is `go test ./test/history -run History -history.duration=5m` (or
// `make history`).
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
// quiescent checks.
const burstLength = 5 * time.Second

func loadTime() time.Duration {
	if *duration > 0 {
		return *duration
	}
	return shortLoad
}

// TestMain removes the Postgres container pgtest may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }
