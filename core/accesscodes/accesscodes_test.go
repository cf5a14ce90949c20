package accesscodes_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/test/testkit"
)

type fixture struct {
	svc    *accesscodes.Service
	clock  *platformtest.Clock
	entity entities.Entity
	queue  queues.QueueView
	// other account's entity and queue
	foreignEntity entities.Entity
	foreignQueue  queues.QueueView
}

const acct, other = "acc_1", "acc_2"

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := platformtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	ents := entities.NewService(set.Entities, store, clock)
	qs := queues.NewService(set.Queues, ents, store, events.NewBus(set.Events), clock)
	f := &fixture{clock: clock, svc: accesscodes.NewService(set.AccessCodes, ents, qs, store, clock)}
	mk := func(account string) (entities.Entity, queues.QueueView) {
		e, err2 := ents.Create(ctx, account, entities.CreateInput{Name: platform.Ptr("Branch")})
		if err2 != nil {
			t.Fatal(err2)
		}
		q, err2 := qs.Create(ctx, account, queues.CreateInput{EntityID: &e.ID, Name: platform.Ptr("Desk"), Type: platform.Ptr("TURN")})
		if err2 != nil {
			t.Fatal(err2)
		}
		return e, q
	}
	f.entity, f.queue = mk(acct)
	f.foreignEntity, f.foreignQueue = mk(other)
	return f
}

func code(c string) accesscodes.CreateInput { return accesscodes.CreateInput{Code: platform.Ptr(c)} }

func TestValidateEveryBound(t *testing.T) {
	long := func(n int) *string { return platform.Ptr(strings.Repeat("x", n)) }
	cases := []struct {
		name string
		in   accesscodes.CreateInput
		path string
		rule string
	}{
		{"code missing", accesscodes.CreateInput{}, "code", "required"},
		{"code empty", accesscodes.CreateInput{Code: platform.Ptr("")}, "code", "min_length"},
		{"code too long", accesscodes.CreateInput{Code: long(33)}, "code", "max_length"},
		{"scopeType unknown", accesscodes.CreateInput{Code: long(1), ScopeType: platform.Ptr("branch")}, "scopeType", "oneof"},
		{"scopeId too long", accesscodes.CreateInput{Code: long(1), ScopeType: platform.Ptr("queue"), ScopeID: long(129)}, "scopeId", "max_length"},
		{"scopeId empty", accesscodes.CreateInput{Code: long(1), ScopeType: platform.Ptr("queue"), ScopeID: platform.Ptr("")}, "scopeId", "min_length"},
		{"scopeId needed for entity", accesscodes.CreateInput{Code: long(1), ScopeType: platform.Ptr("entity")}, "scopeId", "required"},
		{"scopeId needed for queue", accesscodes.CreateInput{Code: long(1), ScopeType: platform.Ptr("queue")}, "scopeId", "required"},
		{"scopeId with account scope", accesscodes.CreateInput{Code: long(1), ScopeID: platform.Ptr("que_1")}, "scopeId", "forbidden"},
		{"maxUses zero", accesscodes.CreateInput{Code: long(1), MaxUses: platform.Ptr(0)}, "maxUses", "min"},
		{"maxUses too big", accesscodes.CreateInput{Code: long(1), MaxUses: platform.Ptr(1000001)}, "maxUses", "max"},
		{"expiresAt not a date-time", accesscodes.CreateInput{Code: long(1), ExpiresAt: platform.Ptr("2030-01-01")}, "expiresAt", "date_time"},
		{"prefix too long", accesscodes.CreateInput{Code: long(1), Prefix: long(5)}, "prefix", "max_length"},
		{"classification too long", accesscodes.CreateInput{Code: long(1), Classification: long(61)}, "classification", "max_length"},
		{"priority unknown", accesscodes.CreateInput{Code: long(1), Priority: platform.Ptr("URGENT")}, "priority", "oneof"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := testkit.Fields(t, c.in.Validate())
			if got[c.path] != c.rule {
				t.Fatalf("want %s %s, got %v", c.path, c.rule, got)
			}
		})
	}
	ok := accesscodes.CreateInput{Code: long(32), ScopeType: platform.Ptr("queue"), ScopeID: long(128),
		MaxUses: platform.Ptr(1000000), ExpiresAt: platform.Ptr("2030-01-01T10:00:00+02:00"), Prefix: long(4),
		Classification: long(60), Priority: platform.Ptr("VERY_HIGH"), Properties: map[string]any{"a": []any{1.0, "x"}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("every bound at its limit: %v", err)
	}
}

func TestCreateAppliesDefaults(t *testing.T) {
	f := setup(t)
	c, err := f.svc.Create(context.Background(), acct, accesscodes.CreateInput{Code: platform.Ptr("VIP-1"),
		ExpiresAt: platform.Ptr("2030-01-01T10:00:00+02:00")})
	if err != nil {
		t.Fatal(err)
	}
	if c.ScopeType != "account" || c.ScopeID != nil || !c.Enabled || c.Uses != 0 || c.Properties == nil ||
		!strings.HasPrefix(c.ID, "acd_") || !c.ExpiresAt.Equal(time.Date(2030, 1, 1, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestCreateRefusesDuplicateAndBadScope(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	if _, err := f.svc.Create(ctx, acct, code("A1")); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.Create(ctx, acct, code("A1"))
	if !platform.IsCode(err, accesscodes.CodeDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	// The same value in another account is another code.
	if _, err := f.svc.Create(ctx, other, code("A1")); err != nil {
		t.Fatalf("same code, other account: %v", err)
	}
	n := 0
	scoped := func(typ, id string) accesscodes.CreateInput {
		n++
		return accesscodes.CreateInput{Code: platform.Ptr(fmt.Sprint("S", n)), ScopeType: &typ, ScopeID: &id}
	}
	for _, c := range []struct {
		in   accesscodes.CreateInput
		want string
	}{
		{scoped("entity", "ent_missing"), accesscodes.CodeScopeNotFound},
		{scoped("queue", "que_missing"), accesscodes.CodeScopeNotFound},
		{scoped("queue", f.entity.ID), accesscodes.CodeScopeNotFound}, // an entity id is no queue
		{scoped("entity", f.foreignEntity.ID), accesscodes.CodeScopeNotFound},
		{scoped("queue", f.foreignQueue.ID), accesscodes.CodeScopeNotFound},
	} {
		if _, err := f.svc.Create(ctx, acct, c.in); !platform.IsCode(err, c.want) {
			t.Errorf("%s %s: want %s, got %v", *c.in.ScopeType, *c.in.ScopeID, c.want, err)
		}
	}
	for _, in := range []accesscodes.CreateInput{scoped("entity", f.entity.ID), scoped("queue", f.queue.ID)} {
		if _, err := f.svc.Create(ctx, acct, in); err != nil {
			t.Errorf("valid scope %s: %v", *in.ScopeType, err)
		}
	}
}

func TestBulkIsAllOrNothingAndNamesEveryFailingIndex(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	if _, err := f.svc.Create(ctx, acct, code("OLD")); err != nil {
		t.Fatal(err)
	}
	in := accesscodes.BulkInput{Codes: []accesscodes.CreateInput{
		code("N1"),
		code("OLD"), // exists
		code("N2"),
		code("N1"), // repeats index 0
		{Code: platform.Ptr("N3"), ScopeType: platform.Ptr("queue"), ScopeID: platform.Ptr("que_missing")},
		{Code: platform.Ptr("N4"), ScopeType: platform.Ptr("entity"), ScopeID: &f.foreignEntity.ID},
	}}
	_, err := f.svc.CreateBulk(ctx, acct, in)
	e, ok := platform.AsError(err)
	if !ok || e.Code != accesscodes.CodeDuplicate || e.Kind != platform.KindConflict {
		t.Fatalf("want 409 %s, got %v", accesscodes.CodeDuplicate, err)
	}
	got := map[string]string{}
	for _, it := range e.Details["items"].([]accesscodes.ItemError) {
		got[it.Path] = it.Code
	}
	want := map[string]string{
		"codes[1].code":    accesscodes.CodeDuplicate,
		"codes[3].code":    accesscodes.CodeDuplicate,
		"codes[4].scopeId": accesscodes.CodeScopeNotFound,
		"codes[5].scopeId": accesscodes.CodeScopeNotFound,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("items: want %v, got %v", want, got)
	}
	// Nothing was created.
	page, err := f.svc.List(ctx, acct, platform.PageRequest{Limit: 50})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("after a refused bulk: %d codes, %v", len(page.Items), err)
	}

	// Field rules come first, as VALIDATION_ERROR with indexed paths.
	_, err = f.svc.CreateBulk(ctx, acct, accesscodes.BulkInput{Codes: []accesscodes.CreateInput{code("ok"), {}, {Code: platform.Ptr("x"), MaxUses: platform.Ptr(0)}}})
	fields := testkit.Fields(t, err)
	if fields["codes[1].code"] != "required" || fields["codes[2].maxUses"] != "min" || len(fields) != 2 {
		t.Fatalf("fields: %v", fields)
	}
	for _, n := range []int{0, 1001} {
		cs := make([]accesscodes.CreateInput, n)
		for i := range cs {
			cs[i] = code(fmt.Sprint("B", i))
		}
		if fields := testkit.Fields(t, mustFail(f.svc.CreateBulk(ctx, acct, accesscodes.BulkInput{Codes: cs}))); fields["codes"] == "" {
			t.Fatalf("%d codes: %v", n, fields)
		}
	}
	if fields := testkit.Fields(t, mustFail(f.svc.CreateBulk(ctx, acct, accesscodes.BulkInput{}))); fields["codes"] != "required" {
		t.Fatalf("no codes: %v", fields)
	}

	// 1000 codes at once.
	cs := make([]accesscodes.CreateInput, 1000)
	for i := range cs {
		cs[i] = accesscodes.CreateInput{Code: platform.Ptr(fmt.Sprint("K", i)), ScopeType: platform.Ptr("queue"), ScopeID: &f.queue.ID}
	}
	made, err := f.svc.CreateBulk(ctx, acct, accesscodes.BulkInput{Codes: cs})
	if err != nil || len(made) != 1000 || made[999].Code != "K999" {
		t.Fatalf("1000 codes: %d, %v", len(made), err)
	}
}

func TestDisable(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	c, _ := f.svc.Create(ctx, acct, code("D1"))
	f.clock.Advance(time.Minute)
	d, err := f.svc.Disable(ctx, acct, c.ID)
	if err != nil || d.Enabled || d.DisabledAt == nil || !d.DisabledAt.Equal(f.clock.Now()) {
		t.Fatalf("disable: %+v %v", d, err)
	}
	f.clock.Advance(time.Minute)
	again, err := f.svc.Disable(ctx, acct, c.ID)
	if err != nil || !again.DisabledAt.Equal(*d.DisabledAt) {
		t.Fatalf("disable twice changes nothing: %+v %v", again, err)
	}
	if _, err := f.svc.Disable(ctx, other, c.ID); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account: %v", err)
	}
	if _, err := f.svc.Disable(ctx, acct, "acd_missing"); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("missing: %v", err)
	}
}

func TestUseChecksEveryRule(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	here := accesscodes.Target{QueueID: f.queue.ID, EntityID: f.entity.ID}
	elsewhere := accesscodes.Target{QueueID: "que_other", EntityID: "ent_other"}
	mk := func(in accesscodes.CreateInput) accesscodes.AccessCode {
		c, err := f.svc.Create(ctx, acct, in)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	mk(accesscodes.CreateInput{Code: platform.Ptr("ANY")})
	mk(accesscodes.CreateInput{Code: platform.Ptr("ENT"), ScopeType: platform.Ptr("entity"), ScopeID: &f.entity.ID})
	mk(accesscodes.CreateInput{Code: platform.Ptr("QUE"), ScopeType: platform.Ptr("queue"), ScopeID: &f.queue.ID})
	mk(accesscodes.CreateInput{Code: platform.Ptr("EXP"), ExpiresAt: platform.Ptr(f.clock.Now().Add(time.Hour).Format(time.RFC3339))})
	mk(accesscodes.CreateInput{Code: platform.Ptr("TWO"), MaxUses: platform.Ptr(2)})
	off := mk(accesscodes.CreateInput{Code: platform.Ptr("OFF")})
	if _, err := f.svc.Disable(ctx, acct, off.ID); err != nil {
		t.Fatal(err)
	}

	use := func(c string, tg accesscodes.Target) error { _, err := f.svc.Use(ctx, acct, c, tg); return err }
	for _, c := range []struct {
		code string
		tg   accesscodes.Target
		want string
	}{
		{"ANY", elsewhere, ""},
		{"ENT", here, ""},
		{"ENT", accesscodes.Target{QueueID: "que_x", EntityID: f.entity.ID}, ""},
		{"ENT", elsewhere, accesscodes.CodeOutOfScope},
		{"QUE", here, ""},
		{"QUE", accesscodes.Target{QueueID: "que_x", EntityID: f.entity.ID}, accesscodes.CodeOutOfScope},
		{"OFF", here, accesscodes.CodeDisabled},
		{"NOPE", here, accesscodes.CodeUnknown},
		{"any", here, accesscodes.CodeUnknown}, // codes match exactly
		{"EXP", here, ""},
		{"TWO", here, ""},
		{"TWO", here, ""},
		{"TWO", here, accesscodes.CodeExhausted},
	} {
		err := use(c.code, c.tg)
		if (c.want == "" && err != nil) || (c.want != "" && !platform.IsCode(err, c.want)) {
			t.Errorf("use %s: want %q, got %v", c.code, c.want, err)
		}
	}
	// Another account's code is unknown to this account.
	if _, err := f.svc.Use(ctx, other, "ANY", here); !platform.IsCode(err, accesscodes.CodeUnknown) {
		t.Errorf("other account: %v", err)
	}
	f.clock.Advance(time.Hour) // expiresAt itself is past
	if err := use("EXP", here); !platform.IsCode(err, accesscodes.CodeExpired) {
		t.Errorf("expired: %v", err)
	}
	c, _ := f.svc.List(ctx, acct, platform.PageRequest{Limit: 50})
	for _, it := range c.Items {
		if it.Code == "TWO" && it.Uses != 2 {
			t.Errorf("TWO counted %d uses", it.Uses)
		}
	}
}

func TestUseRollsBackWithTheCallersTransaction(t *testing.T) {
	clock := platformtest.NewClock(time.Now())
	set, store := testkit.MemorySet(t, clock)
	svc := accesscodes.NewService(set.AccessCodes, nil, nil, store, clock)
	ctx := context.Background()
	c, err := svc.Create(ctx, acct, accesscodes.CreateInput{Code: platform.Ptr("ONE"), MaxUses: platform.Ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	boom := fmt.Errorf("the turn could not be created")
	err = store.Do(ctx, func(ctx context.Context) error {
		if _, err := svc.Use(ctx, acct, "ONE", accesscodes.Target{}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatal(err)
	}
	got, _ := svc.Get(ctx, acct, c.ID)
	if got.Uses != 0 {
		t.Fatalf("a rolled-back turn kept its use: %d", got.Uses)
	}
	if _, err := svc.Use(ctx, acct, "ONE", accesscodes.Target{}); err != nil {
		t.Fatalf("the use is still there: %v", err)
	}
}

func TestUseLastUseConcurrently(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	if _, err := f.svc.Create(ctx, acct, accesscodes.CreateInput{Code: platform.Ptr("LAST"), MaxUses: platform.Ptr(1)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, exhausted := 0, 0
	for range 20 {
		wg.Go(func() {
			_, err := f.svc.Use(ctx, acct, "LAST", accesscodes.Target{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case platform.IsCode(err, accesscodes.CodeExhausted):
				exhausted++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok != 1 || exhausted != 19 {
		t.Fatalf("20 takers of one use: %d succeeded, %d exhausted", ok, exhausted)
	}
}

func mustFail[T any](_ T, err error) error { return err }
