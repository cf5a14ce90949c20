package contract

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/workflow"
)

// WorkflowHarness is a fresh workflow repository, the owners its links
// reference, and a way to delete an entity with its queues.
type WorkflowHarness struct {
	Repo         workflow.Repository
	Owners       Owners
	DeleteEntity func(ctx context.Context, id string) error
}

// RunWorkflow runs the workflow.Repository contract (links).
func RunWorkflow(t *testing.T, newHarness func(t *testing.T) WorkflowHarness) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	mk := func(o Owned, from, to string) workflow.Link {
		return workflow.Link{ID: platform.NewID(workflow.PrefixLink), AccountID: o.AccountID,
			FromQueueDefinitionID: from, ToQueueDefinitionID: to, Trigger: workflow.TriggerComplete,
			Conditions: []workflow.Condition{}, CreatedAt: now, UpdatedAt: now}
	}

	t.Run("stores, updates and deletes a link", func(t *testing.T) {
		h := newHarness(t)
		o := h.Owners.Seed(t)
		l := mk(o, o.QueueID, o.QueueID2)
		l.KeepNumber, l.KeepFormResponse = true, true
		l.Conditions = []workflow.Condition{
			{Source: str("answer"), Key: str("reason"), Operator: str("contains"), Value: str("parcel")},
			{Source: str("priority"), Operator: str("eq"), Value: str("HIGH")},
		}
		if err := h.Repo.CreateLink(ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := h.Repo.GetLink(ctx, l.ID)
		if err != nil || !reflect.DeepEqual(got, l) {
			t.Fatalf("GetLink:\n got %+v\nwant %+v (%v)", got, l, err)
		}
		l.Trigger, l.Conditions, l.UpdatedAt = workflow.TriggerManual, []workflow.Condition{}, now.Add(time.Minute)
		l.FromQueueDefinitionID, l.ToQueueDefinitionID = o.QueueID2, o.QueueID
		if err := h.Repo.UpdateLink(ctx, l); err != nil {
			t.Fatal(err)
		}
		if got, _ := h.Repo.GetLink(ctx, l.ID); !reflect.DeepEqual(got, l) {
			t.Fatalf("after UpdateLink:\n got %+v\nwant %+v", got, l)
		}
		if err := h.Repo.DeleteLink(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Repo.GetLink(ctx, l.ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("after DeleteLink: %v", err)
		}
	})

	t.Run("lists by account and by source queue", func(t *testing.T) {
		h := newHarness(t)
		a, b := h.Owners.Seed(t), h.Owners.Seed(t)
		l1, l2, l3 := mk(a, a.QueueID, a.QueueID2), mk(a, a.QueueID2, a.QueueID), mk(a, a.QueueID, a.QueueID2)
		for _, l := range []workflow.Link{l1, l2, l3, mk(b, b.QueueID, b.QueueID2)} {
			if err := h.Repo.CreateLink(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		page, err := h.Repo.ListLinks(ctx, a.AccountID, platform.PageRequest{Limit: 2})
		if err != nil || len(page) != 3 || page[0].ID != l1.ID {
			t.Fatalf("ListLinks: %d %v", len(page), err)
		}
		page, _ = h.Repo.ListLinks(ctx, a.AccountID, platform.PageRequest{Limit: 2, After: l2.ID})
		if len(page) != 1 || page[0].ID != l3.ID {
			t.Fatalf("ListLinks after: %+v", page)
		}
		from, err := h.Repo.LinksFrom(ctx, a.QueueID)
		if err != nil || len(from) != 2 || from[0].ID != l1.ID || from[1].ID != l3.ID {
			t.Fatalf("LinksFrom: %+v %v", from, err)
		}
	})

	t.Run("deleting a queue deletes its links", func(t *testing.T) {
		h := newHarness(t)
		a, b := h.Owners.Seed(t), h.Owners.Seed(t)
		gone, kept := mk(a, a.QueueID, a.QueueID2), mk(b, b.QueueID, b.QueueID2)
		for _, l := range []workflow.Link{gone, kept} {
			if err := h.Repo.CreateLink(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.DeleteEntity(ctx, a.EntityID); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Repo.GetLink(ctx, gone.ID); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("link of a deleted queue: %v", err)
		}
		if _, err := h.Repo.GetLink(ctx, kept.ID); err != nil {
			t.Fatalf("other link: %v", err)
		}
	})
}
