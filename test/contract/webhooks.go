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

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/ports"
)

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
func RunWebhooks(t *testing.T, newSet NewSet) {
	runWebhooks1(t, newSet)
	runWebhooks2(t, newSet)
	runWebhooks3(t, newSet)
}

// runWebhooks1 is part 1 of RunWebhooks: endpoints; deliveries.
func runWebhooks1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("endpoints", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		newAccountID(t, set, "acc_a")
		newAccountID(t, set, "acc_b")
		a1 := WebhookEndpoint("whe_1", "acc_a", "queue.closed")
		a2 := WebhookEndpoint("whe_2", "acc_a", "queue.opened", "queue.closed")
		a3 := WebhookEndpoint("whe_3", "acc_a", "turn.created")
		b1 := WebhookEndpoint("whe_4", "acc_b", "queue.closed")
		for _, e := range []webhooks.Endpoint{a1, a2, a3, b1} {
			if err := set.Webhooks.CreateEndpoint(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		got, err := set.Webhooks.GetEndpoint(ctx, "whe_2")
		if err != nil {
			t.Fatal(err)
		}
		if got.Secret.Reveal() != a2.Secret.Reveal() || got.URL != a2.URL || strings.Join(got.Events, ",") != "queue.opened,queue.closed" ||
			got.AccountID != "acc_a" || !got.CreatedAt.Equal(a2.CreatedAt) {
			t.Fatalf("GetEndpoint = %+v", got)
		}
		if _, err := set.Webhooks.GetEndpoint(ctx, "whe_nope"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing endpoint: %v", err)
		}
		if n, err := set.Webhooks.CountEndpoints(ctx, "acc_a"); err != nil || n != 3 {
			t.Fatalf("CountEndpoints = %d, %v", n, err)
		}
		page, err := set.Webhooks.ListEndpoints(ctx, "acc_a", platform.PageRequest{Limit: 1})
		if err != nil || len(page) != 2 || page[0].ID != "whe_1" || page[1].ID != "whe_2" {
			t.Fatalf("first page %+v, %v", page, err)
		}
		page, _ = set.Webhooks.ListEndpoints(ctx, "acc_a", platform.PageRequest{Limit: 5, After: "whe_1"})
		if len(page) != 2 || page[0].ID != "whe_2" || page[1].ID != "whe_3" {
			t.Fatalf("second page %+v", page)
		}
		for _, e := range page {
			if e.Secret != "" {
				t.Fatal("a list carries secrets")
			}
		}
		subs, err := set.Webhooks.SubscribedEndpoints(ctx, "acc_a", "queue.closed")
		if err != nil || len(subs) != 2 || subs[0].ID != "whe_1" || subs[1].ID != "whe_2" || subs[0].Secret != "" {
			t.Fatalf("SubscribedEndpoints = %+v, %v", subs, err)
		}
		if subs, _ := set.Webhooks.SubscribedEndpoints(ctx, "acc_b", "turn.created"); len(subs) != 0 {
			t.Fatalf("acc_b subscribed to turn.created: %+v", subs)
		}
	})

	t.Run("deliveries", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		newAccountID(t, set, "acc_a")
		newAccountID(t, set, "acc_b")
		for _, e := range []webhooks.Endpoint{WebhookEndpoint("whe_1", "acc_a", "queue.closed"), WebhookEndpoint("whe_2", "acc_b", "queue.closed")} {
			if err := set.Webhooks.CreateEndpoint(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 35 {
			id := fmt.Sprintf("dlv_%02d", i)
			if err := set.Webhooks.CreateDelivery(ctx, WebhookDelivery(id, "acc_a", "whe_1")); err != nil {
				t.Fatal(err)
			}
		}
		if err := set.Webhooks.CreateDelivery(ctx, WebhookDelivery("dlv_b", "acc_b", "whe_2")); err != nil {
			t.Fatal(err)
		}
		want := WebhookDelivery("dlv_00", "acc_a", "whe_1")
		got, err := set.Webhooks.GetDelivery(ctx, "dlv_00")
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
		err = set.UoW.Do(ctx, func(ctx context.Context) error {
			d, err := set.Webhooks.GetDeliveryForUpdate(ctx, "dlv_00")
			if err != nil {
				return err
			}
			d.Status, d.Attempts, d.LastResponseStatus, d.LastError = webhooks.StatusFailed, 1, &status, &msg
			d.LastAttemptAt, d.NextAttemptAt, d.RetryToken = &now, &next, "tok_2"
			d.Body = []byte("must not be stored")
			return set.Webhooks.UpdateDelivery(ctx, d)
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ = set.Webhooks.GetDelivery(ctx, "dlv_00")
		if got.Status != webhooks.StatusFailed || got.Attempts != 1 || *got.LastResponseStatus != 500 || *got.LastError != msg ||
			!got.LastAttemptAt.Equal(now) || !got.NextAttemptAt.Equal(next) || got.RetryToken != "tok_2" || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("after UpdateDelivery: %+v", got)
		}

		recent, err := set.Webhooks.RecentDeliveries(ctx, "acc_a", webhooks.RecentDeliveries)
		if err != nil || len(recent) != 30 || recent[0].ID != "dlv_34" || recent[29].ID != "dlv_05" {
			t.Fatalf("RecentDeliveries: %d, first %v, %v", len(recent), recent[0].ID, err)
		}
		if recent, _ := set.Webhooks.RecentDeliveries(ctx, "acc_b", 30); len(recent) != 1 || recent[0].ID != "dlv_b" {
			t.Fatalf("acc_b's log: %+v", recent)
		}

		// Deleting the endpoint deletes its deliveries, and only those.
		if err := set.Webhooks.DeleteEndpoint(ctx, "whe_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := set.Webhooks.GetDelivery(ctx, "dlv_00"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("a delivery outlived its endpoint: %v", err)
		}
		if recent, _ := set.Webhooks.RecentDeliveries(ctx, "acc_a", 30); len(recent) != 0 {
			t.Fatalf("%d deliveries outlived their endpoint", len(recent))
		}
		if _, err := set.Webhooks.GetDelivery(ctx, "dlv_b"); err != nil {
			t.Fatalf("another endpoint's delivery went too: %v", err)
		}
	})
}

// runWebhooks2 is part 2 of RunWebhooks: fan-out and success.
func runWebhooks2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("fan-out and success", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		newAccountID(t, set, "acc_a")
		e1, e2 := WebhookEndpoint("whe_1", "acc_a", "queue.closed"), WebhookEndpoint("whe_2", "acc_a", "queue.closed")
		for _, e := range []webhooks.Endpoint{e1, e2} {
			if err := set.Webhooks.CreateEndpoint(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		ds := []webhooks.Delivery{WebhookDelivery("dlv_1", "acc_a", "whe_1"), WebhookDelivery("dlv_2", "acc_a", "whe_2"),
			WebhookDelivery("dlv_3", "acc_a", "whe_1")}
		failed, at := "the receiver answered 500", time.Date(2026, 3, 1, 9, 0, 3, 0, time.UTC)
		status := 500
		ds[2].Attempts, ds[2].Status, ds[2].LastError, ds[2].LastResponseStatus, ds[2].LastAttemptAt = 1, webhooks.StatusFailed, &failed, &status, &at

		// All or none, with the unit of work.
		boom := errors.New("boom")
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if err := set.Webhooks.CreateDeliveries(ctx, ds); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, err := set.Webhooks.GetDelivery(ctx, "dlv_1"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("a delivery outlived its rollback: %v", err)
		}
		if err := set.UoW.Do(ctx, func(ctx context.Context) error { return set.Webhooks.CreateDeliveries(ctx, ds) }); err != nil {
			t.Fatal(err)
		}
		for _, want := range ds {
			got, ep, err := set.Webhooks.GetDeliveryToSend(ctx, want.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantEp := e1
			if want.EndpointID == "whe_2" {
				wantEp = e2
			}
			if got.ID != want.ID || got.EndpointID != want.EndpointID || got.EventID != want.EventID || got.Event != want.Event ||
				!bytes.Equal(got.Body, want.Body) || got.Status != want.Status || got.RetryToken != want.RetryToken ||
				got.Attempts != want.Attempts || !got.CreatedAt.Equal(want.CreatedAt) || (got.LastError == nil) != (want.LastError == nil) ||
				(got.LastResponseStatus == nil) != (want.LastResponseStatus == nil) || (got.LastAttemptAt == nil) != (want.LastAttemptAt == nil) {
				t.Fatalf("GetDeliveryToSend = %+v, want %+v", got, want)
			}
			if ep.ID != wantEp.ID || ep.URL != wantEp.URL || ep.Secret.Reveal() != wantEp.Secret.Reveal() || ep.AccountID != "acc_a" {
				t.Fatalf("GetDeliveryToSend's endpoint = %+v, want %+v", ep, wantEp)
			}
		}
		if got, _ := set.Webhooks.GetDelivery(ctx, "dlv_3"); *got.LastError != failed || *got.LastResponseStatus != 500 || !got.LastAttemptAt.Equal(at) {
			t.Fatalf("dlv_3 = %+v", got)
		}
		if _, _, err := set.Webhooks.GetDeliveryToSend(ctx, "dlv_nope"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("GetDeliveryToSend of no delivery: %v", err)
		}

		// A success ends the schedule and clears the failure, whatever
		// came before.
		done := time.Date(2026, 3, 1, 9, 0, 9, 0, time.UTC)
		if err := set.Webhooks.RecordSuccess(ctx, "dlv_3", done, 204); err != nil {
			t.Fatal(err)
		}
		got, _ := set.Webhooks.GetDelivery(ctx, "dlv_3")
		if got.Status != webhooks.StatusSucceeded || got.Attempts != 2 || got.LastResponseStatus == nil || *got.LastResponseStatus != 204 ||
			got.LastError != nil || got.LastAttemptAt == nil || !got.LastAttemptAt.Equal(done) || got.NextAttemptAt != nil ||
			got.RetryToken != "" || !bytes.Equal(got.Body, ds[2].Body) {
			t.Fatalf("after RecordSuccess: %+v", got)
		}
		if err := set.Webhooks.RecordSuccess(ctx, "dlv_nope", done, 200); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("RecordSuccess of no delivery: %v", err)
		}

		successesRaceFailures(t, ctx, set, failed, done)
		manySuccessesAtOnce(t, ctx, set, done)

		// Gone with its endpoint.
		if err := set.Webhooks.DeleteEndpoint(ctx, "whe_2"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := set.Webhooks.GetDeliveryToSend(ctx, "dlv_2"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("GetDeliveryToSend after the endpoint's deletion: %v", err)
		}
		if err := set.Webhooks.RecordSuccess(ctx, "dlv_2", done, 200); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("RecordSuccess after the endpoint's deletion: %v", err)
		}
	})
}

// runWebhooks3 is part 3 of RunWebhooks: rollback.
func runWebhooks3(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	t.Run("rollback", func(t *testing.T) {
		t.Parallel()
		set := newSet(t)
		newAccountID(t, set, "acc_a")
		boom := errors.New("boom")
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if err := set.Webhooks.CreateEndpoint(ctx, WebhookEndpoint("whe_1", "acc_a", "queue.closed")); err != nil {
				return err
			}
			if err := set.Webhooks.CreateDelivery(ctx, WebhookDelivery("dlv_1", "acc_a", "whe_1")); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, err := set.Webhooks.GetEndpoint(ctx, "whe_1"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("endpoint after rollback: %v", err)
		}
		if _, err := set.Webhooks.GetDelivery(ctx, "dlv_1"); !platform.IsCode(err, platform.CodeNotFound) {
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
			if err := s.Webhooks.CreateEndpoint(ctx, WebhookEndpoint("whe_"+account, account, platform.EventName[queues.QueueClosed]())); err != nil {
				t.Fatal(err)
			}
			err := s.UoW.Do(ctx, func(ctx context.Context) error {
				if err := bus.Emit(ctx, platform.Event{AccountID: account, Name: platform.EventName[queues.QueueClosed](), OccurredAt: time.Now()}); err != nil {
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

// successesRaceFailures: successes recorded while failures are (each a
// locked read and an update in a unit of work) of dlv_1: none is lost.
func successesRaceFailures(t *testing.T, ctx context.Context, set adapterset.Set, failed string, done time.Time) {
	t.Helper()
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- set.Webhooks.RecordSuccess(ctx, "dlv_1", done, 200)
		}()
		go func() {
			defer wg.Done()
			errs <- set.UoW.Do(ctx, func(ctx context.Context) error {
				d, err := set.Webhooks.GetDeliveryForUpdate(ctx, "dlv_1")
				if err != nil {
					return err
				}
				d.Attempts++
				d.Status, d.LastError, d.LastAttemptAt = webhooks.StatusFailed, &failed, &done
				return set.Webhooks.UpdateDelivery(ctx, d)
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := set.Webhooks.GetDelivery(ctx, "dlv_1"); got.Attempts != 2*n {
		t.Fatalf("attempts after %d successes and %d failures recorded at once: %d", n, n, got.Attempts)
	}
}

// manySuccessesAtOnce: many successes at once, one of a delivery that does
// not exist: each hears its own outcome (Postgres writes them in shared
// statements).
func manySuccessesAtOnce(t *testing.T, ctx context.Context, set adapterset.Set, done time.Time) {
	t.Helper()
	many := make([]webhooks.Delivery, 40)
	for i := range many {
		many[i] = WebhookDelivery(fmt.Sprintf("dlv_m%02d", i), "acc_a", "whe_1")
	}
	if err := set.Webhooks.CreateDeliveries(ctx, many); err != nil {
		t.Fatal(err)
	}
	outcomes := make([]error, len(many)+1)
	var mwg sync.WaitGroup
	for i := range outcomes {
		mwg.Add(1)
		go func() {
			defer mwg.Done()
			id := "dlv_gone"
			if i < len(many) {
				id = many[i].ID
			}
			outcomes[i] = set.Webhooks.RecordSuccess(ctx, id, done, 200+i%3)
		}()
	}
	mwg.Wait()
	for i, d := range many {
		if outcomes[i] != nil {
			t.Fatalf("RecordSuccess(%s): %v", d.ID, outcomes[i])
		}
		got, _ := set.Webhooks.GetDelivery(ctx, d.ID)
		if got.Status != webhooks.StatusSucceeded || got.Attempts != 1 || *got.LastResponseStatus != 200+i%3 || got.RetryToken != "" {
			t.Fatalf("%s after RecordSuccess: %+v", d.ID, got)
		}
	}
	if err := outcomes[len(many)]; !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("RecordSuccess of no delivery among others: %v", err)
	}
}
