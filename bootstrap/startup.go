package bootstrap

import (
	"errors"
	"fmt"

	"go.uber.org/fx/fxevent"

	"github.com/qms-dev/qms/adapters/postgres"
)

// StartupCause is what a process that could not start says: for a database
// that cannot be used (postgres.StartupError), one line naming the cause
// and the setting to fix, instead of the dependency graph's trail; other
// errors as they are.
func StartupCause(err error) error {
	var se *postgres.StartupError
	if errors.As(err, &se) {
		return fmt.Errorf("QMS_DATABASE_URL: %s", se.Msg)
	}
	return err
}

// quietStartup passes fx's events to its logger, except the failures that
// carry a postgres.StartupError: the process reports those itself, in one
// line (StartupCause), and fx's copies of it (the failed constructor, then
// every invoke that needed it) would bury that line in kilobytes of trace.
type quietStartup struct{ fxevent.Logger }

func (q quietStartup) LogEvent(e fxevent.Event) {
	var err error
	switch e := e.(type) {
	case *fxevent.Run:
		err = e.Err
	case *fxevent.Invoked:
		err = e.Err
	case *fxevent.Provided:
		err = e.Err
	case *fxevent.Started:
		err = e.Err
	}
	var se *postgres.StartupError
	if err != nil && errors.As(err, &se) {
		return
	}
	q.Logger.LogEvent(e)
}
