package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// The line lengths the speed requirement is stated at: each operation may
// cost at most twice as much at 10,000 waiting turns as at 100.
var benchLines = []int{100, 1000, 10000}

// seedLine fills the run with n WAITING turns in one statement (one in ten
// HIGH, the rest NORMAL), as n intakes would have left them, and returns
// the id of the last NORMAL one: the turn with the most turns ahead.
func seedLine(b *testing.B, p *pgTurns, n int) string {
	b.Helper()
	ctx := context.Background()
	_, err := p.db.Pool.Exec(ctx, `
		INSERT INTO turns (id, account_id, queue_id, run_id, number, display_code, status, priority, priority_rank, seq,
			people_count, notify_whatsapp, form_response, call_count, reentries, held_from, reopen_to, request_hash,
			created_at, updated_at)
		SELECT 'turn_' || lpad(g::text, 26, '0'), $1, $2, $3, g, 'A' || g, 'WAITING',
			CASE WHEN g % 10 = 0 THEN 'HIGH' ELSE 'NORMAL' END, CASE WHEN g % 10 = 0 THEN 1 ELSE 2 END,
			nextval('turn_seq'), 1, false, '{}', 0, 0, '', '', '', now(), now()
		FROM generate_series(1, $4::int) g`, p.account, p.queue, p.run, n)
	if err != nil {
		b.Fatal(err)
	}
	// The run's counter and line version (migration 0250).
	if _, err := p.db.Pool.Exec(ctx, `INSERT INTO turn_counters (run_id, period, last_number, line_version)
		VALUES ($1, '', $2, 1)`, p.run, n); err != nil {
		b.Fatal(err)
	}
	// A line built over hours has been read and vacuumed many times: its
	// tuples carry their hint bits and the statistics know it. Without
	// this, the first reads of the fresh rows would write those bits (and
	// their WAL) during the timing.
	if _, err := p.db.Pool.Exec(ctx, `VACUUM ANALYZE turns`); err != nil {
		b.Fatal(err)
	}
	last := n
	if last%10 == 0 {
		last--
	}
	return fmt.Sprintf("turn_%026d", last)
}

// BenchmarkTurnGet measures GET /turns/{turnId} through the service on
// Postgres: the full view with position and wait estimate of the turn with
// the most turns ahead, as a customer polls it while the line stands still.
func BenchmarkTurnGet(b *testing.B) {
	for _, n := range benchLines {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			p := newPGTurns(b, queues.CreateInput{Stations: []queues.StationInput{{Label: platform.Ptr("Desk")}}})
			id := seedLine(b, p, n)
			ctx := context.Background()
			v, err := p.svc.Get(ctx, p.account, id)
			if err != nil {
				b.Fatal(err)
			}
			if v.Position == nil || *v.Position != n || v.WaitEstimate == nil {
				b.Fatalf("the last turn: position %v, want %d", v.Position, n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := p.svc.Get(ctx, p.account, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTurnGetAfterLineChange is GET /turns/{turnId} right after each
// change of the line made by another process (a turn taken there, off the
// clock): every read finds its cached line one version old and patches it
// from the recorded change.
func BenchmarkTurnGetAfterLineChange(b *testing.B) {
	benchGetAfterChange(b, func(b *testing.B, p *pgTurns) {
		if _, _, err := p.other.Create(context.Background(), p.account, p.run, turns.CreateInput{}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkTurnGetAfterLineReload is the cache's worst case: before each
// read the line's version moves without a change record (as if more than
// the patchable number of changes had happened), so every read reloads the
// whole line. Shown for what a reload costs; it is not the polling case.
func BenchmarkTurnGetAfterLineReload(b *testing.B) {
	benchGetAfterChange(b, func(b *testing.B, p *pgTurns) {
		if _, err := p.db.Pool.Exec(context.Background(), `UPDATE turn_counters SET line_version = line_version + 1 WHERE run_id = $1`, p.run); err != nil {
			b.Fatal(err)
		}
	})
}

func benchGetAfterChange(b *testing.B, change func(*testing.B, *pgTurns)) {
	for _, n := range benchLines {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			p := newPGTurns(b, queues.CreateInput{})
			id := seedLine(b, p, n)
			ctx := context.Background()
			if _, err := p.svc.Get(ctx, p.account, id); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				change(b, p)
				b.StartTimer()
				if _, err := p.svc.Get(ctx, p.account, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDispatchNext measures POST /queue-runs/{runId}/dispatch/next
// through the service on Postgres: take the head of the line, call it,
// raise turn.called. A new turn joins the line after each call, off the
// clock, so the line keeps its length.
func BenchmarkDispatchNext(b *testing.B) {
	for _, n := range benchLines {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			p := newPGTurns(b, queues.CreateInput{})
			seedLine(b, p, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := p.svc.Next(ctx, p.account, p.run, turns.CallInput{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, _, err := p.svc.Create(ctx, p.account, p.run, turns.CreateInput{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
