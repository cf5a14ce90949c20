package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/ports"
)

// WebhooksHarness is one adapter's webhooks repository with its unit of
// work and a way to create accounts (Postgres has foreign keys to them).
type WebhooksHarness struct {
	Repo       webhooks.Repository
	UoW        platform.UnitOfWork
	NewAccount func(t *testing.T, id string)
}

// WebhookEndpoint is an endpoint of account subscribed to events.
func WebhookEndpoint(id, account string, events ...string) webhooks.Endpoint {
	return webhooks.Endpoint{ID: id, AccountID: account, URL: "https://hooks.example.com/" + id, Events: events,
		Secret: webhooks.NewSecret(), CreatedAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}

// WebhookDelivery is a pending delivery of the endpoint, its body not
// canonical JSON on purpose.
func WebhookDelivery(id, account, endpointID string) webhooks.Delivery {
	return webhooks.Delivery{ID: id, AccountID: account, EndpointID: endpointID, EventID: "evt_" + id,
		Event: "queue.closed", Status: webhooks.StatusPending, RetryToken: "tok_" + id,
		CreatedAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC),
		// Not canonical JSON on purpose: the bytes must come back as they went in.
		Body: []byte(`{"id":"` + id + `",  "event":"queue.closed","data":{"z":1,"a":2.50},"createdAt":"2026-03-01T09:00:00.000Z"}`)}
}

// RunWebhooks runs the webhooks.Repository contract.
func RunWebhooks(t *testing.T, newHarness func(t *testing.T) WebhooksHarness) {
	ctx := context.Background()

	t.Run("endpoints", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.NewAccount(t, "acc_a")
		h.NewAccount(t, "acc_b")
		a1 := WebhookEndpoint("whe_1", "acc_a", "queue.closed")
		a2 := WebhookEndpoint("whe_2", "acc_a", "queue.opened", "queue.closed")
		a3 := WebhookEndpoint("whe_3", "acc_a", "turn.created")
		b1 := WebhookEndpoint("whe_4", "acc_b", "queue.closed")
		for _, e := range []webhooks.Endpoint{a1, a2, a3, b1} {
			if err := h.Repo.CreateEndpoint(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		got, err := h.Repo.GetEndpoint(ctx, "whe_2")
		if err != nil {
			t.Fatal(err)
		}
		if got.Secret.Reveal() != a2.Secret.Reveal() || got.URL != a2.URL || strings.Join(got.Events, ",") != "queue.opened,queue.closed" ||
			got.AccountID != "acc_a" || !got.CreatedAt.Equal(a2.CreatedAt) {
			t.Fatalf("GetEndpoint = %+v", got)
		}
		if _, err := h.Repo.GetEndpoint(ctx, "whe_nope"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing endpoint: %v", err)
		}
		if n, err := h.Repo.CountEndpoints(ctx, "acc_a"); err != nil || n != 3 {
			t.Fatalf("CountEndpoints = %d, %v", n, err)
		}
		page, err := h.Repo.ListEndpoints(ctx, "acc_a", platform.PageRequest{Limit: 1})
		if err != nil || len(page) != 2 || page[0].ID != "whe_1" || page[1].ID != "whe_2" {
			t.Fatalf("first page %+v, %v", page, err)
		}
		page, _ = h.Repo.ListEndpoints(ctx, "acc_a", platform.PageRequest{Limit: 5, After: "whe_1"})
		if len(page) != 2 || page[0].ID != "whe_2" || page[1].ID != "whe_3" {
			t.Fatalf("second page %+v", page)
		}
		for _, e := range page {
			if e.Secret != "" {
				t.Fatal("a list carries secrets")
			}
		}
		subs, err := h.Repo.SubscribedEndpoints(ctx, "acc_a", "queue.closed")
		if err != nil || len(subs) != 2 || subs[0].ID != "whe_1" || subs[1].ID != "whe_2" || subs[0].Secret != "" {
			t.Fatalf("SubscribedEndpoints = %+v, %v", subs, err)
		}
		if subs, _ := h.Repo.SubscribedEndpoints(ctx, "acc_b", "turn.created"); len(subs) != 0 {
			t.Fatalf("acc_b subscribed to turn.created: %+v", subs)
		}
	})

	t.Run("deliveries", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.NewAccount(t, "acc_a")
		h.NewAccount(t, "acc_b")
		for _, e := range []webhooks.Endpoint{WebhookEndpoint("whe_1", "acc_a", "queue.closed"), WebhookEndpoint("whe_2", "acc_b", "queue.closed")} {
			if err := h.Repo.CreateEndpoint(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 35 {
			id := fmt.Sprintf("dlv_%02d", i)
			if err := h.Repo.CreateDelivery(ctx, WebhookDelivery(id, "acc_a", "whe_1")); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Repo.CreateDelivery(ctx, WebhookDelivery("dlv_b", "acc_b", "whe_2")); err != nil {
			t.Fatal(err)
		}
		want := WebhookDelivery("dlv_00", "acc_a", "whe_1")
		got, err := h.Repo.GetDelivery(ctx, "dlv_00")
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
		err = h.UoW.Do(ctx, func(ctx context.Context) error {
			d, err := h.Repo.GetDeliveryForUpdate(ctx, "dlv_00")
			if err != nil {
				return err
			}
			d.Status, d.Attempts, d.LastResponseStatus, d.LastError = webhooks.StatusFailed, 1, &status, &msg
			d.LastAttemptAt, d.NextAttemptAt, d.RetryToken = &now, &next, "tok_2"
			d.Body = []byte("must not be stored")
			return h.Repo.UpdateDelivery(ctx, d)
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ = h.Repo.GetDelivery(ctx, "dlv_00")
		if got.Status != webhooks.StatusFailed || got.Attempts != 1 || *got.LastResponseStatus != 500 || *got.LastError != msg ||
			!got.LastAttemptAt.Equal(now) || !got.NextAttemptAt.Equal(next) || got.RetryToken != "tok_2" || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("after UpdateDelivery: %+v", got)
		}

		recent, err := h.Repo.RecentDeliveries(ctx, "acc_a", webhooks.RecentDeliveries)
		if err != nil || len(recent) != 30 || recent[0].ID != "dlv_34" || recent[29].ID != "dlv_05" {
			t.Fatalf("RecentDeliveries: %d, first %v, %v", len(recent), recent[0].ID, err)
		}
		if recent, _ := h.Repo.RecentDeliveries(ctx, "acc_b", 30); len(recent) != 1 || recent[0].ID != "dlv_b" {
			t.Fatalf("acc_b's log: %+v", recent)
		}

		// Deleting the endpoint deletes its deliveries, and only those.
		if err := h.Repo.DeleteEndpoint(ctx, "whe_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Repo.GetDelivery(ctx, "dlv_00"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("a delivery outlived its endpoint: %v", err)
		}
		if recent, _ := h.Repo.RecentDeliveries(ctx, "acc_a", 30); len(recent) != 0 {
			t.Fatalf("%d deliveries outlived their endpoint", len(recent))
		}
		if _, err := h.Repo.GetDelivery(ctx, "dlv_b"); err != nil {
			t.Fatalf("another endpoint's delivery went too: %v", err)
		}
	})

	t.Run("rollback", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.NewAccount(t, "acc_a")
		boom := errors.New("boom")
		err := h.UoW.Do(ctx, func(ctx context.Context) error {
			if err := h.Repo.CreateEndpoint(ctx, WebhookEndpoint("whe_1", "acc_a", "queue.closed")); err != nil {
				return err
			}
			if err := h.Repo.CreateDelivery(ctx, WebhookDelivery("dlv_1", "acc_a", "whe_1")); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, err := h.Repo.GetEndpoint(ctx, "whe_1"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("endpoint after rollback: %v", err)
		}
		if _, err := h.Repo.GetDelivery(ctx, "dlv_1"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("delivery after rollback: %v", err)
		}
	})
}

// RunEventFanOut checks the point of the transactional fan-out on a whole
// set: the event, its webhook delivery and the job of the delivery's first
// attempt exist exactly when the change that raised the event committed,
// and the job runs.
func RunEventFanOut(t *testing.T, newSet NewSet) {
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
			s := newSet(t)
			account := NewAccount(t, s)
			var mu sync.Mutex
			var ran []string
			s.JobRunner.Register(ports.JobKind{Name: webhooks.JobDeliver, Handler: func(_ context.Context, j ports.JobContext) error {
				mu.Lock()
				ran = append(ran, string(j.Args))
				mu.Unlock()
				return nil
			}})
			if err := s.JobRunner.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.JobRunner.Stop(context.Background()) })
			svc := webhooks.NewService(s.Webhooks, s.UoW, s.Jobs, nil, platform.SystemClock{}, webhooks.Options{})
			bus := Subscribe(s)
			bus.Subscribe(svc)
			if err := s.Webhooks.CreateEndpoint(ctx, WebhookEndpoint("whe_"+account, account, platform.EventQueueClosed)); err != nil {
				t.Fatal(err)
			}
			err := s.UoW.Do(ctx, func(ctx context.Context) error {
				if err := bus.Emit(ctx, platform.Event{AccountID: account, Name: platform.EventQueueClosed, OccurredAt: time.Now()}); err != nil {
					return err
				}
				return tc.fail
			})
			if !errors.Is(err, tc.fail) {
				t.Fatalf("Do = %v", err)
			}
			// A committed job runs within jobWait; a rolled-back one is
			// given quiet to show up.
			deadline := time.Now().Add(jobWait)
			if tc.want == 0 {
				deadline = time.Now().Add(quiet)
			}
			for {
				mu.Lock()
				n := len(ran)
				mu.Unlock()
				if (tc.want > 0 && n >= tc.want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			logged, _ := eventLog(t, s).List(ctx, account, "", 0)
			ds, _ := s.Webhooks.RecentDeliveries(ctx, account, 30)
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
