package e2e

import (
	"testing"

	"github.com/qms-dev/qms/test/openapitest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestMain checks every exchange of this package against the published
// OpenAPI document (test/openapitest), and removes the Postgres container
// pgtest may have started.
func TestMain(m *testing.M) {
	openapitest.Install()
	pgtest.Main(m)
}
