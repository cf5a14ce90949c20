package e2e

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// lockedBuffer is a buffer the process's log writes to while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestUnknownEnvironmentVariablesAreWarnedAtStartUp: a QMS_ variable that
// names no setting (config.Load lists them: TestUnknownVariablesAreReported)
// is logged at start-up as a warning naming it, so a typo such as
// QMS_TICKET_EXPIRE_AFTER is not silently ignored (issue 23).
func TestUnknownEnvironmentVariablesAreWarnedAtStartUp(t *testing.T) {
	c, err := config.Load("", []string{"QMS_TICKET_EXPIRE_AFTER=3s"})
	if err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	apptest.Memory(t, apptest.WithProcessLog(&log), apptest.WithConfig(func(cfg *config.Config) { cfg.UnknownEnv = c.UnknownEnv }))
	var line string
	for deadline := time.Now().Add(3 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, l := range strings.Split(log.String(), "\n") { // the process log is flushed in batches
			if strings.Contains(l, "QMS_TICKET_EXPIRE_AFTER") {
				line = l
			}
		}
	}
	if !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, "unknown environment variable") {
		t.Fatalf("no start-up warning about QMS_TICKET_EXPIRE_AFTER in:\n%s", log.String())
	}
}
