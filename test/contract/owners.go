package contract

import "github.com/qms-dev/qms/test/testkit"

// Owners and Owned are the shared builder of test/testkit: the suites seed
// the rows their resources hang from through it.
type (
	Owners = testkit.Owners
	Owned  = testkit.Owned
)
