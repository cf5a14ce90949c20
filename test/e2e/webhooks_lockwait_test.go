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
	url, a, run, gone, stays := twoEndpoints(t)
	for range 2 { // the queue cached: the next intakes draw ahead
		a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}).Must(http.StatusCreated, nil)
	}

	holder, tx := holdInTx(t, url, `SELECT 1 FROM queue_runs WHERE id = $1 FOR NO KEY UPDATE`, run)
	done := make(chan *apptest.Response, 1)
	go func() { done <- a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}) }()
	waitForLockWaiter(t, holder)

	a.API(http.MethodDelete, "/webhook-endpoints/"+gone, nil).Must(http.StatusOK, nil)
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	awaitCreated(t, done, "the intake that waited for its run while an endpoint was deleted")
	// The endpoint that stayed has its delivery (and the two warm-ups'),
	// the deleted one none.
	wantDeliveries(t, holder, stays, 3)
	wantDeliveries(t, holder, gone, 0)
}

// TestChangeOutlivesAnEndpointDeletedAsItsDeliveriesGoIn: an endpoint
// whose deletion is still uncommitted when a change's deliveries are
// inserted is there for the insert, whose foreign key check then waits
// for the deletion and fails once it commits. The change is run again
// (the unit's retry), no longer sees the endpoint, and answers 201: the
// customer is not refused a turn because an administrator removed a
// webhook at that moment.
func TestChangeOutlivesAnEndpointDeletedAsItsDeliveriesGoIn(t *testing.T) {
	url, a, run, gone, stays := twoEndpoints(t)
	a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}).Must(http.StatusCreated, nil)

	// The first turn's deliveries sent, so that no job's update of one
	// waits behind the deletion below: the one session waiting will be
	// the intake's.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var due int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE status <> 'SUCCEEDED'`).Scan(&due); err != nil {
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
	holder, tx := holdInTx(t, url, `DELETE FROM webhook_endpoints WHERE id = $1`, gone)
	done := make(chan *apptest.Response, 1)
	go func() { done <- a.API(http.MethodPost, "/queue-runs/"+run+"/turns", map[string]any{}) }()
	waitForLockWaiter(t, holder) // the delivery's key check, behind the deletion
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	awaitCreated(t, done, "the intake whose delivery met an endpoint's deletion")
	wantDeliveries(t, holder, stays, 2)
	wantDeliveries(t, holder, gone, 0)
}

// twoEndpoints is a PostgreSQL process with a run and two endpoints of
// turn.created, one to be deleted and one that stays.
func twoEndpoints(t *testing.T) (url string, a *apptest.App, run, gone, stays string) {
	t.Helper()
	url = pgtest.URL(t)
	a = apptest.PostgresAt(t, url, whNoLimit)
	rc := newWhReceiver(t, nil)
	run = whRun(t, a)
	gone, _ = whEndpoint(t, a, rc.URL(), "turn.created")
	stays, _ = whEndpoint(t, a, rc.URL(), "turn.created")
	return url, a, run, gone, stays
}

// holdInTx opens a connection of its own to url and, in a transaction
// left open, runs stmt: whatever it locks stays locked until the caller
// commits the transaction (rolled back, and the connection closed, at the
// test's end otherwise).
func holdInTx(t *testing.T, url, stmt string, args ...any) (*pgx.Conn, pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close(ctx) })
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) }) // a no-op once committed
	if _, err := tx.Exec(ctx, stmt, args...); err != nil {
		t.Fatal(err)
	}
	return holder, tx
}

// awaitCreated wants the answer on done to be 201 within 30 s.
func awaitCreated(t *testing.T, done <-chan *apptest.Response, what string) {
	t.Helper()
	select {
	case r := <-done:
		if r.Status != http.StatusCreated {
			t.Fatalf("%s: %d %s", what, r.Status, r.Body)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer", what)
	}
}

// wantDeliveries wants n deliveries stored for the endpoint.
func wantDeliveries(t *testing.T, conn *pgx.Conn, endpoint string, n int) {
	t.Helper()
	var got int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, endpoint).Scan(&got); err != nil || got != n {
		t.Fatalf("deliveries of endpoint %s: %d (%v), want %d", endpoint, got, err, n)
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
