package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestRateLimiterPrunesPastWindows(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	now := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	old := postgres.NewRateLimiter(db)
	if _, err := old.Allow(ctx, "k", 10, now); err != nil {
		t.Fatal(err)
	}
	// A new limiter prunes on its first call; the window of a minute ago is
	// kept (it may still be in use by a process whose clock lags a little).
	l := postgres.NewRateLimiter(db)
	for _, at := range []time.Time{now.Add(time.Minute), now.Add(3 * time.Minute)} {
		if _, err := l.Allow(ctx, "k", 10, at); err != nil {
			t.Fatal(err)
		}
	}
	var windows []time.Time
	rows, err := db.Pool.Query(ctx, "SELECT window_start FROM rate_limits ORDER BY window_start")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var w time.Time
		if err := rows.Scan(&w); err != nil {
			t.Fatal(err)
		}
		windows = append(windows, w.UTC())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// The first call of l (12:01) pruned nothing older than 12:00; its next
	// prune is due at 12:02, so the 12:03 call deleted 12:00 and 12:01.
	want := []time.Time{now.Add(3 * time.Minute).Truncate(time.Minute)}
	if len(windows) != len(want) || !windows[0].Equal(want[0]) {
		t.Fatalf("windows = %v, want %v", windows, want)
	}
}
