package textfuzz

import (
	"testing"

	"github.com/qms-dev/qms/test/pgtest"
)

// TestMain removes the Postgres container pgtest may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }
