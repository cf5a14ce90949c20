package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/apptest"
)

// TestRetentionJobPrunes runs a process whose prune job comes every 300 ms
// and whose clock then jumps eight days: what was made before the jump
// (webhook deliveries, forwards, a finished turn's ticket link, and on
// Postgres the events, line changes and rate-limit windows, counted in the
// database) disappears, and what is made after it stays.
func TestRetentionJobPrunes(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		clock := platformtest.NewClock(time.Now().Truncate(time.Microsecond)) // as Postgres keeps it
		a := start(t, apptest.WithClock(clock), apptest.WithConfig(func(c *config.Config) {
			c.Retention.Interval = 300 * time.Millisecond
			c.Retention.Forwards = 7 * 24 * time.Hour
			c.RateLimit.PerMinute = 100000 // the test polls
		}))
		rc := newWhReceiver(t, whStatic(http.StatusOK))
		whEndpoint(t, a, rc.URL(), "turn.created")
		_, qa, runA := setupQueue(t, a, nil)
		_, qb, runB := setupQueue(t, a, nil)
		_, qc, runC := setupQueue(t, a, nil)
		for _, from := range []string{qa, qc} {
			a.API(http.MethodPost, "/queue-links", map[string]any{"fromQueueDefinitionId": from, "toQueueDefinitionId": qb}).
				Must(http.StatusCreated, nil)
		}

		// Before the jump: a turn in A, served and forwarded to B, two
		// deliveries, and A's run closed.
		var old struct{ ID string }
		takeTurn(a, runA, map[string]any{}).Must(http.StatusCreated, &old)
		serve(t, a, old.ID)
		oldLink := newTicketLink(t, a, old.ID, nil)
		forwardsOf(t, a, old.ID, 1)
		rc.wait(t, 2, 20*time.Second)
		oldDeliveries := whLog(t, a)
		for _, d := range oldDeliveries {
			whLogged(t, a, d.ID, 20*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "SUCCEEDED" })
		}
		a.API(http.MethodPost, "/queue-runs/"+runA+"/close", nil).Must(http.StatusCreated, nil)

		clock.Advance(8 * 24 * time.Hour)
		t1 := clock.Now()

		// After it: the same again from C, and a turn in B.
		var fresh struct{ ID string }
		takeTurn(a, runC, map[string]any{}).Must(http.StatusCreated, &fresh)
		serve(t, a, fresh.ID)
		freshLink := newTicketLink(t, a, fresh.ID, nil)
		takeTurn(a, runB, map[string]any{}).Must(http.StatusCreated, nil)
		forwardsOf(t, a, fresh.ID, 1)
		rc.wait(t, 5, 20*time.Second)

		deadline := time.Now().Add(20 * time.Second)
		for {
			var fw struct{ Data []client.QueueForward }
			a.API(http.MethodGet, "/turns/"+old.ID+"/forwards", nil).Must(http.StatusOK, &fw)
			log := whLog(t, a)
			oldLeft := 0
			for _, d := range log {
				if d.CreatedAt.Before(t1) {
					oldLeft++
				}
			}
			// Expired, the old link says so until it is pruned.
			r, _ := readTicket(t, a, oldLink.Token)
			linkGone := r.ErrorCode() == "INVALID_TICKET_LINK"
			if !linkGone && r.ErrorCode() != "TICKET_LINK_EXPIRED" {
				t.Fatalf("old ticket link: %d %s", r.Status, r.Body)
			}
			if len(fw.Data) == 0 && oldLeft == 0 && linkGone {
				if len(log) != 3 {
					t.Fatalf("%d deliveries left, want the 3 made after the jump: %+v", len(log), log)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 20 s: %d old forwards, %d old deliveries left, old link pruned %v (jump to %s): %+v",
					len(fw.Data), oldLeft, linkGone, t1, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(forwardsOf(t, a, fresh.ID, 1)) != 1 {
			t.Fatal("the forward made after the jump was pruned")
		}
		if r, v := readTicket(t, a, freshLink.Token); r.Status != http.StatusOK || v.Status != "COMPLETED" {
			t.Fatalf("the ticket link made after the jump: %d %s", r.Status, r.Body)
		}
		if a.Config.Storage != config.StoragePostgres {
			return
		}

		ctx := context.Background()
		pool, err := pgxpool.New(ctx, a.Config.Database.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		count := func(sql string, args ...any) int {
			t.Helper()
			var n int
			if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			return n
		}
		deadline = time.Now().Add(10 * time.Second)
		for {
			got := map[string]int{
				"old events":               count(`SELECT count(*) FROM events WHERE occurred_at < $1`, t1),
				"old rate-limit keys":      count(`SELECT count(*) FROM rate_limits WHERE updated_at < $1`, t1.Add(-time.Hour)),
				"line changes of closed A": count(`SELECT count(*) FROM turn_line_changes WHERE run_id = $1`, runA),
			}
			if got["old events"]+got["old rate-limit keys"]+got["line changes of closed A"] == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("left after 10 s: %v", got)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for what, n := range map[string]int{
			"new events":        count(`SELECT count(*) FROM events WHERE occurred_at >= $1`, t1),
			"new keys":          count(`SELECT count(*) FROM rate_limits WHERE updated_at >= $1`, t1.Truncate(time.Minute)),
			"line changes of B": count(`SELECT count(*) FROM turn_line_changes WHERE run_id = $1`, runB),
		} {
			if n == 0 {
				t.Errorf("%s: none left", what)
			}
		}
	})
}
