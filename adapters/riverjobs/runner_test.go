package riverjobs_test

import (
	"context"
	"testing"

	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/test/pgtest"
)

// A process whose modules register no job kind still starts and stops.
func TestRunnerWithoutKinds(t *testing.T) {
	t.Parallel()
	r := riverjobs.New(pgtest.New(t), riverjobs.Options{Logger: quietLogger})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
