package failover

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// failures is the test's testing.TB, which keeps every failure it reports
// to say them all again as the run's last lines. A failed run logs the
// tails of three processes' logs and the formation's own after its
// failures, and a CI log cut to its end showed those alone: the failure
// that ended the run was lost above them (stop 38).
type failures struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

// rememberFailures wraps t and registers, before anything else can, the
// cleanup that runs last: the summary.
func rememberFailures(t *testing.T) *failures {
	f := &failures{TB: t}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.msgs) > 0 {
			t.Logf("--- %d failure(s), again, after the logs:\n%s", len(f.msgs), strings.Join(f.msgs, "\n"))
		}
	})
	return f
}

func (f *failures) keep(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, s)
}

func (f *failures) Errorf(format string, args ...any) {
	f.TB.Helper()
	f.keep(fmt.Sprintf(format, args...))
	f.TB.Errorf(format, args...)
}

func (f *failures) Error(args ...any) {
	f.TB.Helper()
	f.keep(fmt.Sprint(args...))
	f.TB.Error(args...)
}

func (f *failures) Fatalf(format string, args ...any) {
	f.TB.Helper()
	f.keep(fmt.Sprintf(format, args...))
	f.TB.Fatalf(format, args...)
}

func (f *failures) Fatal(args ...any) {
	f.TB.Helper()
	f.keep(fmt.Sprint(args...))
	f.TB.Fatal(args...)
}
