package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestRateLimiterPrunesIdleKeys(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	now := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	old := postgres.NewRateLimiter(db)
	if _, err := old.Allow(ctx, "idle", 10, now); err != nil {
		t.Fatal(err)
	}
	// A new limiter prunes on its first call: a key used less than a minute
	// ago is kept; its next prune is due a minute later.
	l := postgres.NewRateLimiter(db)
	if _, err := l.Allow(ctx, "busy", 10, now.Add(59*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(ctx, "busy", 10, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var keys []string
	rows, err := db.Pool.Query(ctx, "SELECT key FROM rate_limits ORDER BY key")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "busy" {
		t.Fatalf("keys = %v, want [busy]", keys)
	}
}
