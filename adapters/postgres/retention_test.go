package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestPruneLargeBacklogInShortBatches prunes 100,000 old events in batches
// of 1,000: each batch is one short statement, so no lock is held for long,
// and the newer events stay.
func TestPruneLargeBacklogInShortBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 rows")
	}
	db := pgtest.New(t)
	ctx := context.Background()
	now := time.Now().UTC()
	const old, fresh = 100_000, 1_000
	_, err := db.Pool.Exec(ctx, `INSERT INTO events (id, account_id, name, data, occurred_at)
		SELECT 'evt_prune_' || lpad(i::text, 8, '0'), 'acc_prune', 'turn.created', '{}',
		       CASE WHEN i <= $1::int THEN $3::timestamptz - interval '2 days' + i * interval '1 ms' ELSE $3::timestamptz END
		FROM generate_series(1, $1::int + $2::int) AS i`, old, fresh, now)
	if err != nil {
		t.Fatal(err)
	}
	p := postgres.NewEvents(db)
	var batches int
	var longest, total time.Duration
	for {
		start := time.Now()
		n, err := p.PruneEvents(ctx, now.Add(-24*time.Hour), 1000)
		d := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		batches, total, longest = batches+1, total+d, max(longest, d)
		if n < 1000 {
			break
		}
	}
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE account_id = 'acc_prune'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events pruned in %d batches of 1000: %v in all, the longest batch %v", old, batches, total.Round(time.Millisecond), longest.Round(time.Millisecond))
	if left != fresh {
		t.Fatalf("%d events left, want the %d newer ones", left, fresh)
	}
	if longest > 2*time.Second {
		t.Errorf("a batch took %v", longest)
	}
}
