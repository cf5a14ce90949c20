package contract

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/workflow"
)

// RunWorkflow runs the workflow.Repository contract (links).
func RunWorkflow(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	mk := func(o Owned, from, to string) workflow.Link {
		return workflow.Link{ID: platform.NewID(workflow.PrefixLink), AccountID: o.AccountID,
			FromQueueDefinitionID: from, ToQueueDefinitionID: to, Trigger: workflow.TriggerComplete,
			Conditions: []workflow.Condition{}, CreatedAt: now, UpdatedAt: now}
	}

	t.Run("stores, updates and deletes a link", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		l := mk(o, o.QueueID, o.QueueID2)
		l.KeepNumber, l.KeepFormResponse = true, true
		l.Conditions = []workflow.Condition{
			{Source: str("answer"), Key: str("reason"), Operator: str("contains"), Value: str("parcel")},
			{Source: str("priority"), Operator: str("eq"), Value: str("HIGH")},
		}
		if err := set.Workflow.CreateLink(ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := set.Workflow.GetLink(ctx, l.ID)
		if err != nil || !reflect.DeepEqual(got, l) {
			t.Fatalf("GetLink:\n got %+v\nwant %+v (%v)", got, l, err)
		}
		l.Trigger, l.Conditions, l.UpdatedAt = workflow.TriggerManual, []workflow.Condition{}, now.Add(time.Minute)
		l.FromQueueDefinitionID, l.ToQueueDefinitionID = o.QueueID2, o.QueueID
		if err := set.Workflow.UpdateLink(ctx, l); err != nil {
			t.Fatal(err)
		}
		if got, _ := set.Workflow.GetLink(ctx, l.ID); !reflect.DeepEqual(got, l) {
			t.Fatalf("after UpdateLink:\n got %+v\nwant %+v", got, l)
		}
		if err := set.Workflow.DeleteLink(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := set.Workflow.GetLink(ctx, l.ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("after DeleteLink: %v", err)
		}
	})

	t.Run("lists by account and by source queue", func(t *testing.T) {
		set := newSet(t)
		a, b := OwnersOf(set).Seed(t), OwnersOf(set).Seed(t)
		l1, l2, l3 := mk(a, a.QueueID, a.QueueID2), mk(a, a.QueueID2, a.QueueID), mk(a, a.QueueID, a.QueueID2)
		for _, l := range []workflow.Link{l1, l2, l3, mk(b, b.QueueID, b.QueueID2)} {
			if err := set.Workflow.CreateLink(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		page, err := set.Workflow.ListLinks(ctx, a.AccountID, platform.PageRequest{Limit: 2})
		if err != nil || len(page) != 3 || page[0].ID != l1.ID {
			t.Fatalf("ListLinks: %d %v", len(page), err)
		}
		page, _ = set.Workflow.ListLinks(ctx, a.AccountID, platform.PageRequest{Limit: 2, After: l2.ID})
		if len(page) != 1 || page[0].ID != l3.ID {
			t.Fatalf("ListLinks after: %+v", page)
		}
		from, err := set.Workflow.LinksFrom(ctx, a.QueueID)
		if err != nil || len(from) != 2 || from[0].ID != l1.ID || from[1].ID != l3.ID {
			t.Fatalf("LinksFrom: %+v %v", from, err)
		}
	})

	t.Run("deleting a queue deletes its links", func(t *testing.T) {
		set := newSet(t)
		a, b := OwnersOf(set).Seed(t), OwnersOf(set).Seed(t)
		gone, kept := mk(a, a.QueueID, a.QueueID2), mk(b, b.QueueID, b.QueueID2)
		for _, l := range []workflow.Link{gone, kept} {
			if err := set.Workflow.CreateLink(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		if err := deleteEntity(set)(ctx, a.EntityID); err != nil {
			t.Fatal(err)
		}
		if _, err := set.Workflow.GetLink(ctx, gone.ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("link of a deleted queue: %v", err)
		}
		if _, err := set.Workflow.GetLink(ctx, kept.ID); err != nil {
			t.Fatalf("other link: %v", err)
		}
	})
}

// RunForwards runs the workflow.ForwardRepository contract.
func RunForwards(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	mk := func(o Owned, turnID, linkID string) workflow.Forward {
		return workflow.Forward{ID: platform.NewID(workflow.PrefixForward), AccountID: o.AccountID, LinkID: linkID,
			FromTurnID: turnID, FromQueueID: o.QueueID, FromRunID: "run_x", ToQueueID: o.QueueID2, Trigger: workflow.TriggerComplete,
			Status: workflow.ForwardPending, CreatedAt: now, UpdatedAt: now}
	}

	t.Run("one forward per turn and link", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		first := mk(o, tu.ID, "lnk_1")
		created, err := set.Forwards.CreateForward(ctx, first)
		if err != nil || !created {
			t.Fatalf("first: %v %v", created, err)
		}
		created, err = set.Forwards.CreateForward(ctx, mk(o, tu.ID, "lnk_1"))
		if err != nil || created {
			t.Fatalf("second for the same pair: %v %v", created, err)
		}
		if created, _ := set.Forwards.CreateForward(ctx, mk(o, tu.ID, "lnk_2")); !created {
			t.Fatal("another link of the same turn")
		}
		got, err := set.Forwards.ForwardOfForUpdate(ctx, tu.ID, "lnk_1")
		if err != nil || got.ID != first.ID {
			t.Fatalf("ForwardOfForUpdate: %+v %v", got, err)
		}
		exp := now.Add(time.Minute)
		got.Status, got.ToTurnID, got.ForwardedAt, got.Attempts, got.UpdatedAt = workflow.ForwardDone, &tu.ID, &exp, 2, exp
		code, msg := "X", "y"
		got.ErrorCode, got.ErrorMessage = &code, &msg
		if err := set.Forwards.UpdateForward(ctx, got); err != nil {
			t.Fatal(err)
		}
		again, err := set.Forwards.GetForward(ctx, first.ID)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("after UpdateForward:\n got %+v\nwant %+v (%v)", again, got, err)
		}
		all, err := set.Forwards.ForwardsOfTurn(ctx, tu.ID)
		if err != nil || len(all) != 2 {
			t.Fatalf("ForwardsOfTurn: %d %v", len(all), err)
		}
		page, err := set.Forwards.ForwardsOfLink(ctx, "lnk_1", platform.PageRequest{Limit: 10})
		if err != nil || len(page) != 1 || page[0].ID != first.ID {
			t.Fatalf("ForwardsOfLink: %+v %v", page, err)
		}
		if _, err := set.Forwards.GetForward(ctx, "fwd_missing"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing: %v", err)
		}
	})

	t.Run("concurrent creates of one pair store one", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		tu := OwnersOf(set).Turn(t, o, o.QueueID)
		var wg sync.WaitGroup
		won := make([]bool, 10)
		for i := range won {
			wg.Go(func() {
				_ = set.UoW.Do(ctx, func(ctx context.Context) error {
					created, err := set.Forwards.CreateForward(ctx, mk(o, tu.ID, "lnk_1"))
					won[i] = created
					return err
				})
			})
		}
		wg.Wait()
		n := 0
		for _, w := range won {
			if w {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d creates stored a forward", n)
		}
	})
}
