package contract

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/platform"
)

// RunStorageHealth runs the ports.Pinger and ports.FaultClassifier
// contract on storage that is up: it pings, and what its repositories
// answer to a client's mistake (a missing record, a duplicate code, a
// request the client gave up on) is no fault of the storage, so it is never a 503.
// The faults themselves (a database away, read-only, out of connections)
// are the PostgreSQL adapter's own tests and test/failover's.
func RunStorageHealth(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("storage that is up pings, and a client's mistake is no fault", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		if err := set.Pinger.Ping(ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
		_, missing := set.Accounts.GetAccount(ctx, "acc_missing")
		if !platform.IsCode(missing, platform.CodeNotFound) {
			t.Fatalf("a missing account: %v, want NOT_FOUND", missing)
		}
		// A code is unique per account: the second is the client's mistake.
		o := OwnersOf(set).Seed(t)
		now := time.Now().UTC().Truncate(time.Microsecond)
		if err := set.AccessCodes.Create(ctx, mkCode(now, o, "TWICE", nil)); err != nil {
			t.Fatal(err)
		}
		duplicate := set.AccessCodes.Create(ctx, mkCode(now, o, "TWICE", nil))
		if !platform.IsCode(duplicate, accesscodes.CodeDuplicate) {
			t.Fatalf("a code stored twice: %v, want %s", duplicate, accesscodes.CodeDuplicate)
		}
		gone, cancel := context.WithCancel(ctx)
		cancel()
		_, cancelled := set.Accounts.GetAccount(gone, o.AccountID)
		for name, err := range map[string]error{"nil": nil, "not found": missing, "duplicate": duplicate,
			"the client gave up": cancelled, "a domain conflict": platform.Conflict("CONTRACT", "no", nil),
			"context.Canceled": context.Canceled, "an error of no kind": errors.New("contract")} {
			if set.Faults.Unavailable(err) {
				t.Errorf("%s (%v) is classified as storage being unavailable", name, err)
			}
		}
	})
}
