package contract_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/ports"
	"github.com/qms-dev/qms/test/pgtest"
)

// webhooksHarness is one adapter's webhooks repository with its unit of
// work and a way to create accounts (Postgres has foreign keys to them).
type webhooksHarness struct {
	repo       webhooks.Repository
	uow        platform.UnitOfWork
	newAccount func(t *testing.T, id string)
}

func memoryWebhooks(t *testing.T) webhooksHarness {
	s := memory.NewStore()
	return webhooksHarness{repo: memory.NewWebhooks(s), uow: s, newAccount: func(*testing.T, string) {}}
}

func postgresWebhooks(t *testing.T) webhooksHarness {
	db := pgtest.New(t)
	repo, err := postgres.NewWebhooks(db, "a key of at least thirty-two characters")
	if err != nil {
		t.Fatal(err)
	}
	return webhooksHarness{repo: repo, uow: db, newAccount: func(t *testing.T, id string) { pgAccount(t, db, id) }}
}

func pgAccount(t *testing.T, db *postgres.DB, id string) {
	t.Helper()
	now := time.Now().UTC()
	err := postgres.NewAccounts(db).CreateAccount(context.Background(),
		accounts.Account{ID: id, Name: "Test", Plan: "premium", CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMemoryWebhooksRepository(t *testing.T)   { runWebhooksRepository(t, memoryWebhooks) }
func TestPostgresWebhooksRepository(t *testing.T) { runWebhooksRepository(t, postgresWebhooks) }

func endpoint(id, account string, events ...string) webhooks.Endpoint {
	return webhooks.Endpoint{ID: id, AccountID: account, URL: "https://hooks.example.com/" + id, Events: events,
		Secret: webhooks.NewSecret(), CreatedAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}

func delivery(id, account, endpointID string) webhooks.Delivery {
	return webhooks.Delivery{ID: id, AccountID: account, EndpointID: endpointID, EventID: "evt_" + id,
		Event: "queue.closed", Status: webhooks.StatusPending, RetryToken: "tok_" + id,
		CreatedAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC),
		// Not canonical JSON on purpose: the bytes must come back as they went in.
		Body: []byte(`{"id":"` + id + `",  "event":"queue.closed","data":{"z":1,"a":2.50},"createdAt":"2026-03-01T09:00:00.000Z"}`)}
}

func runWebhooksRepository(t *testing.T, newHarness func(t *testing.T) webhooksHarness) {
	ctx := context.Background()

	t.Run("endpoints", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.newAccount(t, "acc_a")
		h.newAccount(t, "acc_b")
		a1 := endpoint("whe_1", "acc_a", "queue.closed")
		a2 := endpoint("whe_2", "acc_a", "queue.opened", "queue.closed")
		a3 := endpoint("whe_3", "acc_a", "turn.created")
		b1 := endpoint("whe_4", "acc_b", "queue.closed")
		for _, e := range []webhooks.Endpoint{a1, a2, a3, b1} {
			if err := h.repo.CreateEndpoint(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		got, err := h.repo.GetEndpoint(ctx, "whe_2")
		if err != nil {
			t.Fatal(err)
		}
		if got.Secret.Reveal() != a2.Secret.Reveal() || got.URL != a2.URL || strings.Join(got.Events, ",") != "queue.opened,queue.closed" ||
			got.AccountID != "acc_a" || !got.CreatedAt.Equal(a2.CreatedAt) {
			t.Fatalf("GetEndpoint = %+v", got)
		}
		if _, err := h.repo.GetEndpoint(ctx, "whe_nope"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing endpoint: %v", err)
		}
		if n, err := h.repo.CountEndpoints(ctx, "acc_a"); err != nil || n != 3 {
			t.Fatalf("CountEndpoints = %d, %v", n, err)
		}
		page, err := h.repo.ListEndpoints(ctx, "acc_a", platform.PageRequest{Limit: 1})
		if err != nil || len(page) != 2 || page[0].ID != "whe_1" || page[1].ID != "whe_2" {
			t.Fatalf("first page %+v, %v", page, err)
		}
		page, _ = h.repo.ListEndpoints(ctx, "acc_a", platform.PageRequest{Limit: 5, After: "whe_1"})
		if len(page) != 2 || page[0].ID != "whe_2" || page[1].ID != "whe_3" {
			t.Fatalf("second page %+v", page)
		}
		for _, e := range page {
			if e.Secret != "" {
				t.Fatal("a list carries secrets")
			}
		}
		subs, err := h.repo.SubscribedEndpoints(ctx, "acc_a", "queue.closed")
		if err != nil || len(subs) != 2 || subs[0].ID != "whe_1" || subs[1].ID != "whe_2" || subs[0].Secret != "" {
			t.Fatalf("SubscribedEndpoints = %+v, %v", subs, err)
		}
		if subs, _ := h.repo.SubscribedEndpoints(ctx, "acc_b", "turn.created"); len(subs) != 0 {
			t.Fatalf("acc_b subscribed to turn.created: %+v", subs)
		}
	})

	t.Run("deliveries", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.newAccount(t, "acc_a")
		h.newAccount(t, "acc_b")
		for _, e := range []webhooks.Endpoint{endpoint("whe_1", "acc_a", "queue.closed"), endpoint("whe_2", "acc_b", "queue.closed")} {
			if err := h.repo.CreateEndpoint(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 35 {
			id := fmt.Sprintf("dlv_%02d", i)
			if err := h.repo.CreateDelivery(ctx, delivery(id, "acc_a", "whe_1")); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.repo.CreateDelivery(ctx, delivery("dlv_b", "acc_b", "whe_2")); err != nil {
			t.Fatal(err)
		}
		want := delivery("dlv_00", "acc_a", "whe_1")
		got, err := h.repo.GetDelivery(ctx, "dlv_00")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("the body changed in storage:\n got %s\nwant %s", got.Body, want.Body)
		}
		if got.Status != webhooks.StatusPending || got.RetryToken != "tok_dlv_00" || got.EventID != "evt_dlv_00" || got.Attempts != 0 ||
			got.LastResponseStatus != nil || got.LastError != nil || got.NextAttemptAt != nil {
			t.Fatalf("GetDelivery = %+v", got)
		}

		now := time.Date(2026, 3, 1, 9, 0, 1, 0, time.UTC)
		next := now.Add(5 * time.Second)
		status, msg := 500, "the receiver answered 500"
		err = h.uow.Do(ctx, func(ctx context.Context) error {
			d, err := h.repo.GetDeliveryForUpdate(ctx, "dlv_00")
			if err != nil {
				return err
			}
			d.Status, d.Attempts, d.LastResponseStatus, d.LastError = webhooks.StatusFailed, 1, &status, &msg
			d.LastAttemptAt, d.NextAttemptAt, d.RetryToken = &now, &next, "tok_2"
			d.Body = []byte("must not be stored")
			return h.repo.UpdateDelivery(ctx, d)
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ = h.repo.GetDelivery(ctx, "dlv_00")
		if got.Status != webhooks.StatusFailed || got.Attempts != 1 || *got.LastResponseStatus != 500 || *got.LastError != msg ||
			!got.LastAttemptAt.Equal(now) || !got.NextAttemptAt.Equal(next) || got.RetryToken != "tok_2" || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("after UpdateDelivery: %+v", got)
		}

		recent, err := h.repo.RecentDeliveries(ctx, "acc_a", webhooks.RecentDeliveries)
		if err != nil || len(recent) != 30 || recent[0].ID != "dlv_34" || recent[29].ID != "dlv_05" {
			t.Fatalf("RecentDeliveries: %d, first %v, %v", len(recent), recent[0].ID, err)
		}
		if recent, _ := h.repo.RecentDeliveries(ctx, "acc_b", 30); len(recent) != 1 || recent[0].ID != "dlv_b" {
			t.Fatalf("acc_b's log: %+v", recent)
		}

		// Deleting the endpoint deletes its deliveries, and only those.
		if err := h.repo.DeleteEndpoint(ctx, "whe_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.repo.GetDelivery(ctx, "dlv_00"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("a delivery outlived its endpoint: %v", err)
		}
		if recent, _ := h.repo.RecentDeliveries(ctx, "acc_a", 30); len(recent) != 0 {
			t.Fatalf("%d deliveries outlived their endpoint", len(recent))
		}
		if _, err := h.repo.GetDelivery(ctx, "dlv_b"); err != nil {
			t.Fatalf("another endpoint's delivery went too: %v", err)
		}
	})

	t.Run("rollback", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.newAccount(t, "acc_a")
		boom := errors.New("boom")
		err := h.uow.Do(ctx, func(ctx context.Context) error {
			if err := h.repo.CreateEndpoint(ctx, endpoint("whe_1", "acc_a", "queue.closed")); err != nil {
				return err
			}
			if err := h.repo.CreateDelivery(ctx, delivery("dlv_1", "acc_a", "whe_1")); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, err := h.repo.GetEndpoint(ctx, "whe_1"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("endpoint after rollback: %v", err)
		}
		if _, err := h.repo.GetDelivery(ctx, "dlv_1"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("delivery after rollback: %v", err)
		}
	})
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

	e1 := endpoint("whe_1", "acc_a", "queue.closed")
	e2 := endpoint("whe_2", "acc_a", "queue.closed")
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

// TestPostgresEventAndDeliveryJobCommitTogether checks the point of the
// module's transactional fan-out on Postgres: the event, its delivery and
// the River job of the delivery's first attempt exist exactly when the
// change that raised the event committed.
func TestPostgresEventAndDeliveryJobCommitTogether(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		fail error
		want int
	}{
		{"commit", nil, 1},
		{"rollback", errors.New("the change failed"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.New(t)
			pgAccount(t, db, "acc_a")
			repo, _ := postgres.NewWebhooks(db, "")
			runner := riverjobs.New(db, riverjobs.Options{Logger: quietLogger})
			runner.Register(ports.JobKind{Name: webhooks.JobDeliver, Handler: func(context.Context, ports.JobContext) error { return nil }})
			svc := webhooks.NewService(repo, db, runner, nil, platform.SystemClock{}, webhooks.Options{})
			bus := events.NewBus(postgres.NewEvents(db))
			bus.Subscribe(svc)
			if err := repo.CreateEndpoint(ctx, endpoint("whe_1", "acc_a", "queue.closed")); err != nil {
				t.Fatal(err)
			}
			err := db.Do(ctx, func(ctx context.Context) error {
				if err := bus.Emit(ctx, platform.Event{AccountID: "acc_a", Name: "queue.closed", OccurredAt: time.Now()}); err != nil {
					return err
				}
				return tc.fail
			})
			if !errors.Is(err, tc.fail) {
				t.Fatalf("Do = %v", err)
			}
			var evs, dels, jobs int
			for q, n := range map[string]*int{
				"SELECT count(*) FROM events":                                               &evs,
				"SELECT count(*) FROM webhook_deliveries":                                   &dels,
				"SELECT count(*) FROM river_job WHERE kind = '" + webhooks.JobDeliver + "'": &jobs,
			} {
				if err := db.Pool.QueryRow(ctx, q).Scan(n); err != nil {
					t.Fatal(err)
				}
			}
			if evs != tc.want || dels != tc.want || jobs != tc.want {
				t.Fatalf("events %d, deliveries %d, jobs %d; want %d of each", evs, dels, jobs, tc.want)
			}
			if tc.want == 1 {
				var args string
				if err := db.Pool.QueryRow(ctx, "SELECT args::text FROM river_job").Scan(&args); err != nil {
					t.Fatal(err)
				}
				var id string
				_ = db.Pool.QueryRow(ctx, "SELECT id FROM webhook_deliveries").Scan(&id)
				if !strings.Contains(args, id) {
					t.Fatalf("the job %s does not name delivery %s", args, id)
				}
			}
		})
	}
}

// TestMemoryEventAndDeliveryJobCommitTogether is the same on the memory
// adapters: the in-process runner starts the job of a committed change, and
// never one of a rolled-back change.
func TestMemoryEventAndDeliveryJobCommitTogether(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		fail error
		want int
	}{
		{"commit", nil, 1},
		{"rollback", errors.New("the change failed"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memory.NewStore()
			repo := memory.NewWebhooks(store)
			runner := memory.NewJobRunner(store, platform.SystemClock{}, memory.JobRunnerOptions{Logger: quietLogger})
			var mu sync.Mutex
			var ran []string
			runner.Register(ports.JobKind{Name: webhooks.JobDeliver, Handler: func(_ context.Context, j ports.JobContext) error {
				mu.Lock()
				ran = append(ran, string(j.Args))
				mu.Unlock()
				return nil
			}})
			if err := runner.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = runner.Stop(ctx) })
			svc := webhooks.NewService(repo, store, runner, nil, platform.SystemClock{}, webhooks.Options{})
			evs := memory.NewEvents(store)
			bus := events.NewBus(evs)
			bus.Subscribe(svc)
			if err := repo.CreateEndpoint(ctx, endpoint("whe_1", "acc_a", "queue.closed")); err != nil {
				t.Fatal(err)
			}
			err := store.Do(ctx, func(ctx context.Context) error {
				if err := bus.Emit(ctx, platform.Event{AccountID: "acc_a", Name: "queue.closed", OccurredAt: time.Now()}); err != nil {
					return err
				}
				return tc.fail
			})
			if !errors.Is(err, tc.fail) {
				t.Fatalf("Do = %v", err)
			}
			deadline := time.Now().Add(2 * time.Second)
			for {
				mu.Lock()
				n := len(ran)
				mu.Unlock()
				if n >= tc.want && (tc.want > 0 || time.Now().After(deadline)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d jobs ran, want %d", n, tc.want)
				}
				time.Sleep(10 * time.Millisecond)
			}
			logged, _ := evs.List(ctx, "acc_a", "", 0)
			ds, _ := repo.RecentDeliveries(ctx, "acc_a", 30)
			mu.Lock()
			defer mu.Unlock()
			if len(logged) != tc.want || len(ds) != tc.want || len(ran) != tc.want {
				t.Fatalf("events %d, deliveries %d, jobs run %d; want %d of each", len(logged), len(ds), len(ran), tc.want)
			}
			if tc.want == 1 && !strings.Contains(ran[0], ds[0].ID) {
				t.Fatalf("the job %s does not name delivery %s", ran[0], ds[0].ID)
			}
		})
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

	e1 := endpoint("whe_1", "acc_a", "queue.closed") // sealed under the old key
	e2 := endpoint("whe_2", "acc_a", "queue.closed") // stored in clear
	e3 := endpoint("whe_3", "acc_a", "queue.closed") // written after the rotation
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
