package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/qms-dev/qms/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestMigrateNeedsOnlyTheDatabase runs `qms migrate` on an empty database
// with nothing but the storage mode and the database URL set.
func TestMigrateNeedsOnlyTheDatabase(t *testing.T) {
	url := pgtest.EmptyURL(t)
	t.Setenv("QMS_STORAGE", "postgres")
	t.Setenv("QMS_DATABASE_URL", url)
	t.Setenv("QMS_ADMIN_TOKEN", "")
	var stderr bytes.Buffer
	if code := run([]string{"migrate"}, io.Discard, &stderr); code != 0 {
		t.Fatalf("qms migrate exited %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"migrate"}, io.Discard, &stderr); code != 0 {
		t.Fatalf("qms migrate, a second time: exited %d: %s", code, stderr.String())
	}
}
