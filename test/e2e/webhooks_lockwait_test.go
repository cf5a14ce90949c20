package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestIntakeWaitingForItsRunOutlivesADeletedEndpoint: an intake that
// draws ahead locks its run with the account's webhook endpoints joined
// (lockRunEndpointsSQL), and that statement's snapshot is taken before it
// waits for the run. An endpoint deleted while the intake waits (a busy
// run: another process's chain holds it) must not fail the intake: its
// delivery's insert would break the foreign key to the endpoint, and the
// customer be refused a turn because an administrator removed a webhook.
func TestIntakeWaitingForItsRunOutlivesADeletedEndpoint(t *testing.T) {
	url := pgtest.URL(t)
	a := apptest.PostgresAt(t, url, whNoLimit)
	rc := newWhReceiver(t, nil)
	run := whRun(t, a)
	gone, _ := whEndpoint(t, a, rc.URL(), "turn.created")
	stays, _ := whEndpoint(t, a, rc.URL(), "turn.created")
	for range 2 { // the queue cached: the next intakes draw ahead
		a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}).Must(http.StatusCreated, nil)
	}

	ctx := context.Background()
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `SELECT 1 FROM queue_runs WHERE id = $1 FOR NO KEY UPDATE`, run); err != nil {
		t.Fatal(err)
	}
	done := make(chan *apptest.Response, 1)
	go func() { done <- a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}) }()
	waitForLockWaiter(t, holder)

	a.API(http.MethodDelete, "/webhook-endpoints/"+gone, nil).Must(http.StatusOK, nil)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Status != http.StatusCreated {
			t.Fatalf("the intake that waited for its run while an endpoint was deleted: %d %s", r.Status, r.Body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the intake did not answer")
	}
	// The endpoint that stayed has its delivery (and the two warm-ups'),
	// the deleted one none.
	var kept int
	if err := holder.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, stays).Scan(&kept); err != nil || kept != 3 {
		t.Fatalf("deliveries of the endpoint that stayed: %d (%v), want 3", kept, err)
	}
	var left int
	if err := holder.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, gone).Scan(&left); err != nil || left != 0 {
		t.Fatalf("deliveries of the deleted endpoint: %d (%v)", left, err)
	}
}

// TestChangeOutlivesAnEndpointDeletedAsItsDeliveriesGoIn: an endpoint
// whose deletion is still uncommitted when a change's deliveries are
// inserted is there for the insert, whose foreign key check then waits
// for the deletion and fails once it commits. The change is run again
// (the unit's retry), no longer sees the endpoint, and answers 201: the
// customer is not refused a turn because an administrator removed a
// webhook at that moment.
func TestChangeOutlivesAnEndpointDeletedAsItsDeliveriesGoIn(t *testing.T) {
	url := pgtest.URL(t)
	a := apptest.PostgresAt(t, url, whNoLimit)
	rc := newWhReceiver(t, nil)
	run := whRun(t, a)
	gone, _ := whEndpoint(t, a, rc.URL(), "turn.created")
	stays, _ := whEndpoint(t, a, rc.URL(), "turn.created")
	a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}).Must(http.StatusCreated, nil)

	ctx := context.Background()
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	// The first turn's deliveries sent, so that no job's update of one
	// waits behind the deletion below: the one session waiting will be
	// the intake's.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var due int
		if err := holder.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE status <> 'SUCCEEDED'`).Scan(&due); err != nil {
			t.Fatal(err)
		}
		if due == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries of the first turn still due", due)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1`, gone); err != nil {
		t.Fatal(err)
	}
	done := make(chan *apptest.Response, 1)
	go func() { done <- a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}) }()
	waitForLockWaiter(t, holder) // the delivery's key check, behind the deletion
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Status != http.StatusCreated {
			t.Fatalf("the intake whose delivery met an endpoint's deletion: %d %s", r.Status, r.Body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the intake did not answer")
	}
	var kept, left int
	if err := holder.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, stays).Scan(&kept); err != nil || kept != 2 {
		t.Fatalf("deliveries of the endpoint that stayed: %d (%v), want 2", kept, err)
	}
	if err := holder.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, gone).Scan(&left); err != nil || left != 0 {
		t.Fatalf("deliveries of the deleted endpoint: %d (%v)", left, err)
	}
}

// waitForLockWaiter waits until a session of the database waits for a
// row lock (the intake, behind the holder's).
func waitForLockWaiter(t *testing.T, holder *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := holder.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no intake waits for the run's lock")
}
