package contract

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

var errRollback = errors.New("contract: roll back")

// seedFoundation stores an account and an entity of it, made at now.
func seedFoundation(t *testing.T, ctx context.Context, now time.Time, set adapterset.Set) (accounts.Account, entities.Entity) {
	t.Helper()
	a := accounts.Account{ID: platform.NewID(platform.PrefixAccount), Name: "Acme", Plan: accounts.PlanPremium, CreatedAt: now, UpdatedAt: now}
	if err := set.Accounts.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	e := entities.Entity{ID: platform.NewID(platform.PrefixEntity), AccountID: a.ID, Name: "Main",
		Description: platform.Ptr("the main branch"), CreatedAt: now, UpdatedAt: now}
	if err := set.Entities.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	return a, e
}

// RunFoundationRepositories checks the accounts, entities and queues
// repository contracts: round trips keep every field, lookups of missing
// rows are NOT_FOUND, lists page by id and filter by account, deletes
// cascade, and a failed unit of work leaves nothing behind.
func RunFoundationRepositories(t *testing.T, newSet NewSet) {
	runFoundationRepositories1(t, newSet)
	runFoundationRepositories2(t, newSet)
}

// runFoundationRepositories1 is part 1 of RunFoundationRepositories:
// accounts and keys round trip; entities page by id within the account;
// queues, stations and runs; entity delete cascades.
func runFoundationRepositories1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	t.Run("accounts and keys round trip", func(t *testing.T) {
		set := newSet(t)
		a, _ := seedFoundation(t, ctx, now, set)
		got, err := set.Accounts.GetAccount(ctx, a.ID)
		if err != nil || got.Name != "Acme" || got.Plan != accounts.PlanPremium || !got.CreatedAt.Equal(now) {
			t.Fatalf("account: %+v %v", got, err)
		}
		k := accounts.APIKey{ID: platform.NewID(platform.PrefixAPIKey), AccountID: a.ID, Name: "kiosk", Prefix: "qms_abcdef",
			Hash: "h-" + a.ID, Scopes: []accounts.Scope{accounts.ScopeQueuesRead, accounts.ScopeTurnsWrite}, CreatedAt: now}
		if err := set.Accounts.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		byHash, err := set.Accounts.GetKeyByHash(ctx, k.Hash)
		if err != nil || byHash.ID != k.ID || len(byHash.Scopes) != 2 || byHash.Scopes[1] != accounts.ScopeTurnsWrite {
			t.Fatalf("by hash: %+v %v", byHash, err)
		}
		revoked := now.Add(time.Hour)
		k.RevokedAt = &revoked
		if err := set.Accounts.UpdateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		if got, _ := set.Accounts.GetKey(ctx, k.ID); got.RevokedAt == nil || !got.RevokedAt.Equal(revoked) {
			t.Fatalf("revocation not kept: %+v", got)
		}
		if _, err := set.Accounts.GetKeyByHash(ctx, "nope"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing key: want NOT_FOUND, got %v", err)
		}
		keys, err := set.Accounts.ListKeys(ctx, a.ID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("list keys: %v %v", keys, err)
		}
	})

	t.Run("entities page by id within the account", func(t *testing.T) {
		set := newSet(t)
		a, first := seedFoundation(t, ctx, now, set)
		other, _ := seedFoundation(t, ctx, now, set)
		ids := []string{first.ID}
		for i := 0; i < 4; i++ {
			e := entities.Entity{ID: platform.NewID(platform.PrefixEntity), AccountID: a.ID, Name: "Branch", CreatedAt: now, UpdatedAt: now}
			if err := set.Entities.Create(ctx, e); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.ID)
		}
		var walked []string
		after := ""
		for {
			items, err := set.Entities.List(ctx, a.ID, platform.PageRequest{Limit: 2, After: after})
			if err != nil {
				t.Fatal(err)
			}
			page := platform.PageOf(items, 2, func(e entities.Entity) string { return e.ID })
			for _, e := range page.Items {
				if e.AccountID != a.ID {
					t.Fatalf("entity of account %s listed for %s", e.AccountID, other.ID)
				}
				walked = append(walked, e.ID)
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
		if len(walked) != len(ids) {
			t.Fatalf("walk: want %v, got %v", ids, walked)
		}
		for i := range ids {
			if walked[i] != ids[i] {
				t.Fatalf("walk order: want %v, got %v", ids, walked)
			}
		}
		got, err := set.Entities.Get(ctx, first.ID)
		if err != nil || got.Description == nil || *got.Description != "the main branch" {
			t.Fatalf("entity round trip: %+v %v", got, err)
		}
	})

	t.Run("queues, stations and runs; entity delete cascades", func(t *testing.T) {
		set := newSet(t)
		a, e := seedFoundation(t, ctx, now, set)
		q := queues.Queue{ID: platform.NewID(platform.PrefixQueue), AccountID: a.ID, EntityID: e.ID, Name: "Pharmacy", Type: queues.TypeTurn,
			TurnPrefix: "A", TurnPadding: 3, Dispatchers: 2, CreatedAt: now, UpdatedAt: now,
			PreAttention: queues.PreAttention{Questions: []queues.Question{{ID: platform.Ptr("reason"), Label: platform.Ptr("Reason"),
				Type: platform.Ptr(queues.QuestionChoice), Options: []queues.Option{{Label: platform.Ptr("Urgent"), Priority: platform.Ptr(queues.PriorityHigh)}, {Label: platform.Ptr("Other"), Bare: true}}}}}}
		st := queues.Station{ID: platform.NewID(platform.PrefixStation), AccountID: a.ID, QueueID: q.ID, Label: "Desk 1", CreatedAt: now}
		run := queues.Run{ID: platform.NewID(platform.PrefixRun), AccountID: a.ID, QueueID: q.ID, Status: queues.RunOpen, IntakeOpen: true, OpenedAt: &now, CreatedAt: now, UpdatedAt: now}
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if err := set.Queues.CreateQueue(ctx, q); err != nil {
				return err
			}
			if err := set.Queues.CreateStation(ctx, st); err != nil {
				return err
			}
			return set.Queues.CreateRun(ctx, run)
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := set.Queues.GetQueueForUpdate(ctx, q.ID)
		if err != nil || got.TurnPrefix != "A" || got.Dispatchers != 2 || got.AccountID != a.ID ||
			*got.PreAttention.Questions[0].Options[0].Priority != queues.PriorityHigh || !got.PreAttention.Questions[0].Options[1].Bare {
			t.Fatalf("queue round trip: %+v %v", got, err)
		}
		run.IntakeOpen = false
		if err := set.Queues.UpdateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if r, _ := set.Queues.GetRun(ctx, run.ID); r.IntakeOpen {
			t.Fatal("run update not kept")
		}
		list, err := set.Queues.ListQueues(ctx, a.ID, e.ID, platform.PageRequest{Limit: 10})
		if err != nil || len(list) != 1 {
			t.Fatalf("list by entity: %v %v", list, err)
		}
		if list, _ := set.Queues.ListQueues(ctx, a.ID, "ent_none", platform.PageRequest{Limit: 10}); len(list) != 0 {
			t.Fatalf("filter by another entity: %v", list)
		}
		if err := set.UoW.Do(ctx, func(ctx context.Context) error { return set.Entities.Delete(ctx, e.ID) }); err != nil {
			t.Fatal(err)
		}
		for name, err := range map[string]error{
			"queue":   errOf(set.Queues.GetQueue(ctx, q.ID)),
			"station": errOf(set.Queues.GetStation(ctx, st.ID)),
			"run":     errOf(set.Queues.GetRun(ctx, run.ID)),
		} {
			if !platform.IsCode(err, platform.CodeNotFound) {
				t.Errorf("%s after entity delete: want NOT_FOUND, got %v", name, err)
			}
		}
	})
}

// runFoundationRepositories2 is part 2 of RunFoundationRepositories: a
// failed unit of work leaves nothing.
func runFoundationRepositories2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	t.Run("a failed unit of work leaves nothing", func(t *testing.T) {
		set := newSet(t)
		a, e := seedFoundation(t, ctx, now, set)
		q := queues.Queue{ID: platform.NewID(platform.PrefixQueue), AccountID: a.ID, EntityID: e.ID, Name: "Ghost", Type: queues.TypeTurn, CreatedAt: now, UpdatedAt: now}
		err := set.UoW.Do(ctx, func(ctx context.Context) error {
			if err := set.Queues.CreateQueue(ctx, q); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("want the use case's error, got %v", err)
		}
		if _, err := set.Queues.GetQueue(ctx, q.ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("rolled-back queue: want NOT_FOUND, got %v", err)
		}
	})
}

func errOf[T any](_ T, err error) error { return err }
