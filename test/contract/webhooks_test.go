package contract_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func pgAccount(t *testing.T, db *postgres.DB, id string) {
	t.Helper()
	now := time.Now().UTC()
	err := postgres.NewAccounts(db).CreateAccount(context.Background(),
		accounts.Account{ID: id, Name: "Test", Plan: "premium", CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPostgresWebhookSecretsAtRest checks that a dump of the database does
// not hand the signing secrets out when a key is configured.
func TestPostgresWebhookSecretsAtRest(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	pgAccount(t, db, "acc_a")
	const key = "a key of at least thirty-two characters"
	sealed, _ := postgres.NewWebhooks(db, key)
	clear, _ := postgres.NewWebhooks(db, "")
	other, _ := postgres.NewWebhooks(db, "another key of at least thirty-two chars")

	e1 := contract.WebhookEndpoint("whe_1", "acc_a", "queue.closed")
	e2 := contract.WebhookEndpoint("whe_2", "acc_a", "queue.closed")
	if err := sealed.CreateEndpoint(ctx, e1); err != nil {
		t.Fatal(err)
	}
	if err := clear.CreateEndpoint(ctx, e2); err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	rows, err := db.Pool.Query(ctx, "SELECT id, secret FROM webhook_endpoints")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, s string
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		stored[id] = s
	}
	if s := stored["whe_1"]; !strings.HasPrefix(s, "v1:") || strings.Contains(s, e1.Secret.Reveal()[6:]) {
		t.Fatalf("sealed secret stored as %q", s)
	}
	if s := stored["whe_2"]; s != "plain:"+e2.Secret.Reveal() {
		t.Fatalf("secret written without a key stored as %q", s)
	}

	if got, err := sealed.GetEndpoint(ctx, "whe_1"); err != nil || got.Secret != e1.Secret {
		t.Fatalf("sealed secret read back: %v", err)
	}
	if got, err := sealed.GetEndpoint(ctx, "whe_2"); err != nil || got.Secret != e2.Secret {
		t.Fatalf("a secret written before the key was set: %v", err)
	}
	for name, r := range map[string]*postgres.Webhooks{"no key": clear, "another key": other} {
		got, err := r.GetEndpoint(ctx, "whe_1")
		if !errors.Is(err, webhooks.ErrSecretUnavailable) || got.Secret != "" || got.ID != "whe_1" {
			t.Fatalf("%s opened the sealed secret: %v", name, err)
		}
	}
	// A sealed secret copied onto another endpoint's row does not open.
	if _, err := db.Pool.Exec(ctx, "UPDATE webhook_endpoints SET secret = $1 WHERE id = 'whe_2'", stored["whe_1"]); err != nil {
		t.Fatal(err)
	}
	if _, err := sealed.GetEndpoint(ctx, "whe_2"); !errors.Is(err, webhooks.ErrSecretUnavailable) {
		t.Fatalf("a moved sealed secret opened: %v", err)
	}
}

// TestPostgresWebhookSecretsRotate (issue 14): older keys open what they
// sealed, new secrets are sealed under the first key, resealing without all
// seals only the secrets in clear, and with all moves every secret to the
// current key, after which the old key is no longer needed.
func TestPostgresWebhookSecretsRotate(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	pgAccount(t, db, "acc_a")
	const oldKey = "the old key of at least thirty-two chars"
	const newKey = "the new key of at least thirty-two chars"
	before, _ := postgres.NewWebhooks(db, oldKey)
	clear, _ := postgres.NewWebhooks(db, "")
	rotated, err := postgres.NewWebhooks(db, newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	onlyNew, _ := postgres.NewWebhooks(db, newKey)

	e1 := contract.WebhookEndpoint("whe_1", "acc_a", "queue.closed") // sealed under the old key
	e2 := contract.WebhookEndpoint("whe_2", "acc_a", "queue.closed") // stored in clear
	e3 := contract.WebhookEndpoint("whe_3", "acc_a", "queue.closed") // written after the rotation
	for r, e := range map[*postgres.Webhooks]webhooks.Endpoint{before: e1, clear: e2, rotated: e3} {
		if err := r.CreateEndpoint(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	secretOf := func(id string) string {
		var s string
		if err := db.Pool.QueryRow(ctx, "SELECT secret FROM webhook_endpoints WHERE id = $1", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, e := range []webhooks.Endpoint{e1, e2, e3} {
		if got, err := rotated.GetEndpoint(ctx, e.ID); err != nil || got.Secret != e.Secret {
			t.Fatalf("%s with the rotated keys: %v", e.ID, err)
		}
	}
	if _, err := onlyNew.GetEndpoint(ctx, "whe_1"); !errors.Is(err, webhooks.ErrSecretUnavailable) {
		t.Fatalf("the new key alone opened a secret of the old one: %v", err)
	}
	if got, err := onlyNew.GetEndpoint(ctx, "whe_3"); err != nil || got.Secret != e3.Secret {
		t.Fatalf("a secret written after the rotation is not under the new key: %v", err)
	}

	// Start-up: only the secret in clear is sealed.
	oldSealed := secretOf("whe_1")
	if n, err := rotated.ResealSecrets(ctx, false); err != nil || n != 1 {
		t.Fatalf("reseal plain: %d, %v", n, err)
	}
	if s := secretOf("whe_2"); !strings.HasPrefix(s, "v1:") || secretOf("whe_1") != oldSealed {
		t.Fatalf("after the start-up reseal: whe_2 %q, whe_1 changed %v", s, secretOf("whe_1") != oldSealed)
	}
	// qms reseal-secrets: everything under the new key; again is a no-op.
	if n, err := rotated.ResealSecrets(ctx, true); err != nil || n != 1 {
		t.Fatalf("reseal all: %d, %v", n, err)
	}
	if n, err := rotated.ResealSecrets(ctx, true); err != nil || n != 0 {
		t.Fatalf("reseal again: %d, %v", n, err)
	}
	for _, e := range []webhooks.Endpoint{e1, e2, e3} {
		if got, err := onlyNew.GetEndpoint(ctx, e.ID); err != nil || got.Secret != e.Secret {
			t.Fatalf("%s with the new key alone after resealing: %v", e.ID, err)
		}
	}
	// A secret no key opens is reported, not rewritten.
	stranger, _ := postgres.NewWebhooks(db, "a stranger key of thirty-two characters")
	if n, err := stranger.ResealSecrets(ctx, true); n != 0 || !errors.Is(err, webhooks.ErrSecretUnavailable) {
		t.Fatalf("reseal with a wrong key: %d, %v", n, err)
	}
}

// TestPostgresWebhookAttemptsUseTheirIndexFromTheFirst: on a new
// installation's small, analyzed deliveries table, where PostgreSQL finds
// a sequential scan cheaper than the primary key and would keep that plan
// on the connection while the table grows, an attempt's read and its
// recorded success through the repository (the shared round trips of a
// running process, then enough of them one at a time to reach each
// connection's generic plan) scan no table: every row is found through
// the index (issue 30). The table's counters
// are read after the process's connections have closed, which flushes
// their statistics.
func TestPostgresWebhookAttemptsUseTheirIndexFromTheFirst(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	const n = 40
	setup, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	pgAccount(t, setup, "acc_a")
	repo, _ := postgres.NewWebhooks(setup, "")
	if err := repo.CreateEndpoint(ctx, contract.WebhookEndpoint("whe_1", "acc_a", "queue.closed")); err != nil {
		t.Fatal(err)
	}
	ds := make([]webhooks.Delivery, n)
	for i := range ds {
		ds[i] = contract.WebhookDelivery(fmt.Sprintf("dlv_%02d", i), "acc_a", "whe_1")
	}
	if err := repo.CreateDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Pool.Exec(ctx, "ANALYZE webhook_deliveries"); err != nil {
		t.Fatal(err)
	}
	setup.Close()
	before := deliveryScans(t, url, 0)

	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	repo, _ = postgres.NewWebhooks(db, "")
	done := time.Now().UTC()
	// All at once, as the workers of a busy process start and end
	// together ...
	errs := make(chan error, n)
	for _, d := range ds {
		go func() {
			_, _, err := repo.GetDeliveryToSend(ctx, d.ID)
			errs <- err
		}()
	}
	for range ds {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range ds {
		go func() { errs <- repo.RecordSuccess(ctx, d.ID, done, 200) }()
	}
	for range ds {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// ... then one at a time, past the five custom plans after which a
	// connection keeps its generic plan.
	for i := range 3 * n {
		if _, _, err := repo.GetDeliveryToSend(ctx, ds[i%n].ID); err != nil {
			t.Fatal(err)
		}
		if err := repo.RecordSuccess(ctx, ds[i%n].ID, done, 200); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	after := deliveryScans(t, url, before.updated+4*n)
	if after.seq != before.seq {
		t.Errorf("%d sequential scans of webhook_deliveries while reading and recording %d attempts on a table of %d rows",
			after.seq-before.seq, 4*n, n)
	}
	if after.idx-before.idx < 2*4*n {
		t.Errorf("%d index scans of webhook_deliveries for %d reads and successes", after.idx-before.idx, 2*4*n)
	}
}

type tableScans struct{ seq, idx, updated int64 }

// deliveryScans reads webhook_deliveries' scan counters once its updates
// reach updated (the statistics of closed connections arrive shortly
// after they close).
func deliveryScans(t *testing.T, url string, updated int64) tableScans {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var s tableScans
		if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			t.Fatal(err)
		}
		err := conn.QueryRow(ctx, `SELECT coalesce(seq_scan, 0), coalesce(idx_scan, 0), n_tup_upd
			FROM pg_stat_user_tables WHERE relname = 'webhook_deliveries'`).Scan(&s.seq, &s.idx, &s.updated)
		if err != nil {
			t.Fatal(err)
		}
		if s.updated >= updated {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook_deliveries' statistics show %d updates after 10 s, want %d", s.updated, updated)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
