package contract_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// quietLogger keeps the expected failures of the job suite out of the
// test output.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// newMemorySet is a fresh in-process adapter set.
func newMemorySet(t *testing.T) adapterset.Set {
	s, err := adapterset.Memory(memory.NewStore(), adapterset.Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newPostgresSet is the PostgreSQL set over a fresh database.
func newPostgresSet(t *testing.T) adapterset.Set {
	s, err := adapterset.Postgres(pgtest.New(t), adapterset.Options{Logger: quietLogger, SecretKey: testSecretKey})
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Missing(); len(m) > 0 {
		t.Fatalf("the postgres set leaves ports empty: %v", m)
	}
	return s
}

// testSecretKey seals webhook signing secrets in the contract databases.
const testSecretKey = "a key of at least thirty-two characters"

// TestMemory runs every port's contract against the memory adapters.
func TestMemory(t *testing.T) { contract.Exercise(t, newMemorySet) }

// TestPostgres runs every port's contract against the PostgreSQL adapters.
func TestPostgres(t *testing.T) { contract.Exercise(t, newPostgresSet, contract.Concurrent) }
