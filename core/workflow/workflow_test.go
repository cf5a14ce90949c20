package workflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/test/testkit"
)

func cond(source, key, op, value string) workflow.Condition {
	c := workflow.Condition{Source: &source, Operator: &op, Value: &value}
	if key != "" {
		c.Key = &key
	}
	return c
}

func TestConditionHolds(t *testing.T) {
	subject := workflow.Subject{
		FormResponse: map[string]string{"reason": "Pick up a parcel", "member": "Yes"},
		Priority:     "VERY_HIGH",
	}
	cases := []struct {
		c    workflow.Condition
		want bool
	}{
		{cond("answer", "member", "eq", "Yes"), true},
		{cond("answer", "member", "eq", "yes"), true}, // case is ignored
		{cond("answer", "member", "eq", "No"), false},
		{cond("answer", "member", "neq", "No"), true},
		{cond("answer", "member", "neq", "YES"), false},
		{cond("answer", "reason", "contains", "parcel"), true},
		{cond("answer", "reason", "contains", "PARCEL"), true},
		{cond("answer", "reason", "contains", "letter"), false},
		// An unanswered question is the empty string.
		{cond("answer", "missing", "eq", "x"), false},
		{cond("answer", "missing", "neq", "x"), true},
		{cond("answer", "missing", "contains", "x"), false},
		{cond("priority", "", "eq", "VERY_HIGH"), true},
		{cond("priority", "", "eq", "HIGH"), false},
		{cond("priority", "", "contains", "HIGH"), true},
		{cond("priority", "", "neq", "NORMAL"), true},
		{cond("priority", "", "neq", "very_high"), false},
		// A stored condition is always valid; anything else never holds.
		{cond("colour", "", "eq", "x"), false},
		{cond("priority", "", "like", "x"), false},
	}
	for _, c := range cases {
		if got := c.c.Holds(subject); got != c.want {
			t.Errorf("%s %s %s %q: got %v, want %v", *c.c.Source, platform.Deref(c.c.Key, ""), *c.c.Operator, *c.c.Value, got, c.want)
		}
	}
}

func TestLinkMatchesWhenEveryConditionHolds(t *testing.T) {
	s := workflow.Subject{FormResponse: map[string]string{"a": "1"}, Priority: "LOW"}
	l := workflow.Link{}
	if !l.Matches(s) {
		t.Fatal("a link without conditions matches every turn")
	}
	l.Conditions = []workflow.Condition{cond("answer", "a", "eq", "1"), cond("priority", "", "eq", "LOW")}
	if !l.Matches(s) {
		t.Fatal("both hold")
	}
	l.Conditions = append(l.Conditions, cond("priority", "", "neq", "LOW"))
	if l.Matches(s) {
		t.Fatal("one fails: no match")
	}
}

func TestValidate(t *testing.T) {
	str := func(s string) *string { return &s }
	long := func(n int) *string { return str(strings.Repeat("q", n)) }
	base := func() workflow.CreateInput {
		return workflow.CreateInput{FromQueueDefinitionID: str("que_a"), ToQueueDefinitionID: str("que_b")}
	}
	cases := []struct {
		name string
		mod  func(in *workflow.CreateInput)
		path string
		rule string
	}{
		{"from missing", func(in *workflow.CreateInput) { in.FromQueueDefinitionID = nil }, "fromQueueDefinitionId", "required"},
		{"to missing", func(in *workflow.CreateInput) { in.ToQueueDefinitionID = nil }, "toQueueDefinitionId", "required"},
		{"from empty", func(in *workflow.CreateInput) { in.FromQueueDefinitionID = str("") }, "fromQueueDefinitionId", "min_length"},
		{"to too long", func(in *workflow.CreateInput) { in.ToQueueDefinitionID = long(129) }, "toQueueDefinitionId", "max_length"},
		{"self link", func(in *workflow.CreateInput) { in.ToQueueDefinitionID = str("que_a") }, "toQueueDefinitionId", "distinct"},
		{"trigger", func(in *workflow.CreateInput) { in.Trigger = str("auto") }, "trigger", "oneof"},
		{"too many conditions", func(in *workflow.CreateInput) {
			for range 11 {
				in.Conditions = append(in.Conditions, cond("priority", "", "eq", "HIGH"))
			}
		}, "conditions", "max_items"},
		{"source missing", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{{Operator: str("eq"), Value: str("x")}}
		}, "conditions[0].source", "required"},
		{"source unknown", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{cond("colour", "", "eq", "x")}
		}, "conditions[0].source", "oneof"},
		{"answer without key", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{cond("priority", "", "eq", "x"), cond("answer", "", "eq", "x")}
		}, "conditions[1].key", "required"},
		{"key too long", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{cond("answer", strings.Repeat("k", 61), "eq", "x")}
		}, "conditions[0].key", "max_length"},
		{"operator missing", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{{Source: str("priority"), Value: str("x")}}
		}, "conditions[0].operator", "required"},
		{"operator unknown", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{cond("priority", "", "gt", "x")}
		}, "conditions[0].operator", "oneof"},
		{"value missing", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{{Source: str("priority"), Operator: str("eq")}}
		}, "conditions[0].value", "required"},
		{"value empty", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{cond("priority", "", "eq", "")}
		}, "conditions[0].value", "min_length"},
		{"value too long", func(in *workflow.CreateInput) {
			in.Conditions = []workflow.Condition{cond("priority", "", "eq", strings.Repeat("v", 121))}
		}, "conditions[0].value", "max_length"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.mod(&in)
			if got := testkit.Fields(t, in.Validate()); got[c.path] != c.rule {
				t.Fatalf("want %s %s, got %v", c.path, c.rule, got)
			}
		})
	}
	ok := base()
	ok.FromQueueDefinitionID, ok.ToQueueDefinitionID = long(128), long(127)
	for range 10 {
		ok.Conditions = append(ok.Conditions, cond("answer", strings.Repeat("k", 60), "contains", strings.Repeat("v", 120)))
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("every bound at its limit: %v", err)
	}
	// PATCH: the queue ids stay required, the rest is optional.
	if got := testkit.Fields(t, (&workflow.UpdateInput{}).Validate()); got["fromQueueDefinitionId"] != "required" || got["toQueueDefinitionId"] != "required" {
		t.Fatalf("PATCH without queue ids: %v", got)
	}
	if err := (&workflow.UpdateInput{FromQueueDefinitionID: str("a"), ToQueueDefinitionID: str("b")}).Validate(); err != nil {
		t.Fatalf("PATCH with only the queue ids: %v", err)
	}
	null := workflow.UpdateInput{FromQueueDefinitionID: str("a"), ToQueueDefinitionID: str("b"),
		Trigger: platform.Patch[string]{Set: true, Null: true}, KeepNumber: platform.Patch[bool]{Set: true, Null: true},
		KeepFormResponse: platform.Patch[bool]{Set: true, Null: true}, Conditions: platform.Patch[[]workflow.Condition]{Set: true, Null: true}}
	if got := testkit.Fields(t, null.Validate()); len(got) != 4 || got["trigger"] != "not_null" || got["conditions"] != "not_null" {
		t.Fatalf("PATCH with nulls: %v", got)
	}
}

type fixture struct {
	svc        *workflow.Service
	clock      *platformtest.Clock
	a, b, c    string // queues of acct
	foreign    string // a queue of other
	entityOfA  string
	queuesSvc  *queues.Service
	entitiesSv *entities.Service
}

const acct, other = "acc_1", "acc_2"

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := platformtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	ents := entities.NewService(set.Entities, store, clock)
	qs := queues.NewService(set.Queues, ents, store, events.NewBus(set.Events), clock)
	f := &fixture{clock: clock, queuesSvc: qs, entitiesSv: ents,
		svc: workflow.NewService(set.Workflow, qs, store, clock)}
	mk := func(account string) string {
		e, err := ents.Create(ctx, account, entities.CreateInput{Name: platform.Ptr("Branch")})
		if err != nil {
			t.Fatal(err)
		}
		f.entityOfA = e.ID
		q, err := qs.Create(ctx, account, queues.CreateInput{EntityID: &e.ID, Name: platform.Ptr("Desk"), Type: platform.Ptr("TURN")})
		if err != nil {
			t.Fatal(err)
		}
		return q.ID
	}
	f.foreign = mk(other)
	f.a, f.b, f.c = mk(acct), mk(acct), mk(acct)
	return f
}

func set[T any](v T) platform.Patch[T] { return platform.Patch[T]{Set: true, Value: v} }

func TestLinkLifecycle(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	l, err := f.svc.Create(ctx, acct, workflow.CreateInput{FromQueueDefinitionID: &f.a, ToQueueDefinitionID: &f.b,
		Conditions: []workflow.Condition{cond("priority", "ignored", "eq", "HIGH")}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Trigger != "complete" || l.KeepNumber || l.KeepFormResponse || len(l.Conditions) != 1 || l.Conditions[0].Key != nil ||
		!strings.HasPrefix(l.ID, "lnk_") {
		t.Fatalf("defaults: %+v", l)
	}
	plain, _ := f.svc.Create(ctx, acct, workflow.CreateInput{FromQueueDefinitionID: &f.b, ToQueueDefinitionID: &f.c})
	if plain.Conditions == nil {
		t.Fatal("conditions must be [] rather than null")
	}

	// PATCH: only what is given changes; no default comes back.
	f.clock.Advance(time.Minute)
	up, err := f.svc.Update(ctx, acct, l.ID, workflow.UpdateInput{FromQueueDefinitionID: &f.a, ToQueueDefinitionID: &f.b,
		KeepNumber: set(true), Trigger: set("manual")})
	if err != nil || !up.KeepNumber || up.Trigger != "manual" || up.KeepFormResponse || len(up.Conditions) != 1 ||
		!up.UpdatedAt.Equal(f.clock.Now()) || !up.CreatedAt.Equal(l.CreatedAt) {
		t.Fatalf("patch: %+v %v", up, err)
	}
	up, err = f.svc.Update(ctx, acct, l.ID, workflow.UpdateInput{FromQueueDefinitionID: &f.a, ToQueueDefinitionID: &f.c,
		Conditions: set([]workflow.Condition{})})
	if err != nil || up.Trigger != "manual" || !up.KeepNumber || len(up.Conditions) != 0 || up.ToQueueDefinitionID != f.c {
		t.Fatalf("second patch (absent trigger kept, conditions cleared, re-pointed): %+v %v", up, err)
	}
	got, err := f.svc.Get(ctx, acct, l.ID)
	if err != nil || got.ToQueueDefinitionID != f.c {
		t.Fatalf("get: %+v %v", got, err)
	}
	page, err := f.svc.List(ctx, acct, platform.PageRequest{Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Next != l.ID {
		t.Fatalf("list: %+v %v", page, err)
	}
	if _, err := f.svc.Get(ctx, other, l.ID); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account reads: %v", err)
	}
	if _, err := f.svc.Delete(ctx, other, l.ID); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account deletes: %v", err)
	}
	if _, err := f.svc.Delete(ctx, acct, l.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, acct, l.ID); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestBothQueuesMustBeTheAccounts(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	missing := "que_missing"
	for _, c := range []struct {
		from, to *string
		want     string
	}{
		{&f.a, &missing, workflow.CodeQueueNotFound},
		{&missing, &f.a, workflow.CodeQueueNotFound},
		{&f.a, &f.foreign, platform.CodeForbidden},
		{&f.foreign, &f.a, platform.CodeForbidden},
		{&f.a, &f.a, platform.CodeValidation},
	} {
		if _, err := f.svc.Create(ctx, acct, workflow.CreateInput{FromQueueDefinitionID: c.from, ToQueueDefinitionID: c.to}); !platform.IsCode(err, c.want) {
			t.Errorf("%s -> %s: want %s, got %v", *c.from, *c.to, c.want, err)
		}
	}
	l, _ := f.svc.Create(ctx, acct, workflow.CreateInput{FromQueueDefinitionID: &f.a, ToQueueDefinitionID: &f.b})
	if _, err := f.svc.Update(ctx, acct, l.ID, workflow.UpdateInput{FromQueueDefinitionID: &f.a, ToQueueDefinitionID: &f.foreign}); !platform.IsCode(err, platform.CodeForbidden) {
		t.Errorf("re-pointing to another account's queue: %v", err)
	}
	if _, err := f.svc.Update(ctx, acct, l.ID, workflow.UpdateInput{FromQueueDefinitionID: &f.b, ToQueueDefinitionID: &f.b}); !platform.IsCode(err, platform.CodeValidation) {
		t.Errorf("re-pointing to itself: %v", err)
	}
}
