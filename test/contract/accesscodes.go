package contract

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/platform"
)

// mkCode is an enabled account-wide code of o made at now, changed by mod.
func mkCode(now time.Time, o Owned, code string, mod func(c *accesscodes.AccessCode)) accesscodes.AccessCode {
	c := accesscodes.AccessCode{ID: platform.NewID(platform.PrefixAccessCode), AccountID: o.AccountID, Code: code,
		ScopeType: accesscodes.ScopeAccount, Properties: map[string]any{}, Enabled: true, CreatedAt: now, UpdatedAt: now}
	if mod != nil {
		mod(&c)
	}
	return c
}

// RunAccessCodes runs the accesscodes.Repository contract.
func RunAccessCodes(t *testing.T, newSet NewSet) {
	runAccessCodes1(t, newSet)
	runAccessCodes2(t, newSet)
}

// runAccessCodes1 is part 1 of RunAccessCodes: stores every field; a code is
// unique per account; concurrent creates of one code: one wins; list pages
// by id within the account.
func runAccessCodes1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	t.Run("stores every field", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		exp := now.Add(48 * time.Hour)
		c := mkCode(now, o, "VIP", func(c *accesscodes.AccessCode) {
			c.ScopeType, c.ScopeID = accesscodes.ScopeQueue, &o.QueueID
			c.MaxUses, c.ExpiresAt = platform.Ptr(3), &exp
			c.Prefix, c.Classification, c.Priority = platform.Ptr("V"), platform.Ptr("gold"), platform.Ptr("HIGH")
			c.Properties = map[string]any{"plate": "ABC-123", "seats": 4.0, "tags": []any{"a", "b"}}
		})
		if err := set.AccessCodes.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := set.AccessCodes.Get(ctx, c.ID)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("Get:\n got %+v\nwant %+v (%v)", got, c, err)
		}
		got, err = set.AccessCodes.GetByCode(ctx, o.AccountID, "VIP")
		if err != nil || got.ID != c.ID {
			t.Fatalf("GetByCode: %+v %v", got, err)
		}
		if _, err := set.AccessCodes.GetByCode(ctx, o.AccountID, "vip"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("codes match exactly: %v", err)
		}
		if _, err := set.AccessCodes.Get(ctx, "acd_missing"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("missing: %v", err)
		}
		c.Enabled, c.DisabledAt, c.UpdatedAt = false, &exp, exp
		if err := set.AccessCodes.Update(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got, _ := set.AccessCodes.Get(ctx, c.ID); !reflect.DeepEqual(got, c) {
			t.Fatalf("after Update:\n got %+v\nwant %+v", got, c)
		}
	})

	t.Run("a code is unique per account", func(t *testing.T) {
		set := newSet(t)
		a, b := OwnersOf(set).Seed(t), OwnersOf(set).Seed(t)
		if err := set.AccessCodes.Create(ctx, mkCode(now, a, "X", nil)); err != nil {
			t.Fatal(err)
		}
		if err := set.AccessCodes.Create(ctx, mkCode(now, a, "X", nil)); !platform.IsCode(err, accesscodes.CodeDuplicate) {
			t.Fatalf("duplicate: %v", err)
		}
		if err := set.AccessCodes.Create(ctx, mkCode(now, b, "X", nil)); err != nil {
			t.Fatalf("same value, other account: %v", err)
		}
		// CreateMany with one duplicate inserts nothing.
		err := set.AccessCodes.CreateMany(ctx, []accesscodes.AccessCode{mkCode(now, a, "Y", nil), mkCode(now, a, "X", nil)})
		if !platform.IsCode(err, accesscodes.CodeDuplicate) {
			t.Fatalf("CreateMany with a duplicate: %v", err)
		}
		if _, err := set.AccessCodes.GetByCode(ctx, a.AccountID, "Y"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("CreateMany was not all or nothing: %v", err)
		}
		got, err := set.AccessCodes.Existing(ctx, a.AccountID, []string{"X", "Y", "Z"})
		if err != nil || !reflect.DeepEqual(got, []string{"X"}) {
			t.Fatalf("Existing: %v %v", got, err)
		}
	})

	t.Run("concurrent creates of one code: one wins", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				errs[i] = set.UoW.Do(ctx, func(ctx context.Context) error { return set.AccessCodes.Create(ctx, mkCode(now, o, "SAME", nil)) })
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !platform.IsCode(err, accesscodes.CodeDuplicate):
				t.Errorf("loser got %v, want %s", err, accesscodes.CodeDuplicate)
			}
		}
		if won != 1 {
			t.Fatalf("%d creates won", won)
		}
	})

	t.Run("list pages by id within the account", func(t *testing.T) {
		set := newSet(t)
		a, b := OwnersOf(set).Seed(t), OwnersOf(set).Seed(t)
		var ids []string
		for i := range 5 {
			c := mkCode(now, a, fmt.Sprint("L", i), nil)
			ids = append(ids, c.ID)
			if err := set.AccessCodes.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := set.AccessCodes.Create(ctx, mkCode(now, b, "L0", nil)); err != nil {
			t.Fatal(err)
		}
		first, err := set.AccessCodes.List(ctx, a.AccountID, platform.PageRequest{Limit: 2})
		if err != nil || len(first) != 3 || first[0].ID != ids[0] {
			t.Fatalf("first page: %d %v", len(first), err)
		}
		rest, err := set.AccessCodes.List(ctx, a.AccountID, platform.PageRequest{Limit: 10, After: first[1].ID})
		if err != nil || len(rest) != 3 || rest[2].ID != ids[4] {
			t.Fatalf("after the cursor: %d %v", len(rest), err)
		}
	})
}

// runAccessCodes2 is part 2 of RunAccessCodes: take use checks and counts
// atomically; twenty takers of one use: exactly one succeeds; deleting the
// scope entity deletes its codes.
func runAccessCodes2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	t.Run("take use checks and counts atomically", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		exp := now.Add(time.Hour)
		codes := map[string]accesscodes.AccessCode{
			"two":      mkCode(now, o, "two", func(c *accesscodes.AccessCode) { c.MaxUses = platform.Ptr(2) }),
			"off":      mkCode(now, o, "off", func(c *accesscodes.AccessCode) { c.Enabled = false }),
			"expiring": mkCode(now, o, "expiring", func(c *accesscodes.AccessCode) { c.ExpiresAt = &exp }),
		}
		for _, c := range codes {
			if err := set.AccessCodes.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		for i, want := range []bool{true, true, false} {
			c, ok, err := set.AccessCodes.TakeUse(ctx, codes["two"].ID, now)
			if err != nil || ok != want || (ok && c.Uses != i+1) {
				t.Fatalf("use %d of two: ok=%v uses=%d %v", i+1, ok, c.Uses, err)
			}
		}
		if _, ok, err := set.AccessCodes.TakeUse(ctx, codes["off"].ID, now); ok || err != nil {
			t.Fatalf("disabled: %v %v", ok, err)
		}
		if _, ok, _ := set.AccessCodes.TakeUse(ctx, codes["expiring"].ID, exp.Add(-time.Second)); !ok {
			t.Fatal("before expiry: refused")
		}
		if _, ok, _ := set.AccessCodes.TakeUse(ctx, codes["expiring"].ID, exp); ok {
			t.Fatal("at expiry: taken")
		}
		if got, _ := set.AccessCodes.Get(ctx, codes["two"].ID); got.Uses != 2 {
			t.Fatalf("two has %d uses", got.Uses)
		}
		// A use taken in a rolled-back unit of work is not counted.
		_ = set.UoW.Do(ctx, func(ctx context.Context) error {
			if _, ok, err := set.AccessCodes.TakeUse(ctx, codes["expiring"].ID, now); !ok || err != nil {
				t.Errorf("in a unit of work: %v %v", ok, err)
			}
			return fmt.Errorf("roll back")
		})
		if got, _ := set.AccessCodes.Get(ctx, codes["expiring"].ID); got.Uses != 1 {
			t.Fatalf("rolled-back use counted: %d", got.Uses)
		}
	})

	t.Run("twenty takers of one use: exactly one succeeds", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		c := mkCode(now, o, "LAST", func(c *accesscodes.AccessCode) { c.MaxUses = platform.Ptr(1) })
		if err := set.AccessCodes.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		svc := accesscodes.NewService(set.AccessCodes, nil, nil, set.UoW, fixedClock(now))
		var wg sync.WaitGroup
		results := make([]error, 20)
		start := make(chan struct{})
		for i := range results {
			wg.Go(func() {
				<-start
				// Each taker holds its transaction open a moment after the
				// use, as a turn being created would.
				results[i] = set.UoW.Do(ctx, func(ctx context.Context) error {
					if _, err := svc.Use(ctx, o.AccountID, "LAST", accesscodes.Target{QueueID: o.QueueID, EntityID: o.EntityID}); err != nil {
						return err
					}
					time.Sleep(5 * time.Millisecond)
					return nil
				})
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range results {
			switch {
			case err == nil:
				ok++
			case !platform.IsCode(err, accesscodes.CodeExhausted):
				t.Errorf("a loser got %v, want %s", err, accesscodes.CodeExhausted)
			}
		}
		if got, _ := set.AccessCodes.Get(ctx, c.ID); ok != 1 || got.Uses != 1 {
			t.Fatalf("%d takers succeeded, uses = %d", ok, got.Uses)
		}
	})

	t.Run("deleting the scope entity deletes its codes", func(t *testing.T) {
		set := newSet(t)
		o := OwnersOf(set).Seed(t)
		scoped := mkCode(now, o, "E", func(c *accesscodes.AccessCode) { c.ScopeType, c.ScopeID = accesscodes.ScopeEntity, &o.EntityID })
		queued := mkCode(now, o, "Q", func(c *accesscodes.AccessCode) { c.ScopeType, c.ScopeID = accesscodes.ScopeQueue, &o.QueueID })
		account := mkCode(now, o, "A", nil)
		if err := set.AccessCodes.CreateMany(ctx, []accesscodes.AccessCode{scoped, queued, account}); err != nil {
			t.Fatal(err)
		}
		if err := set.UoW.Do(ctx, func(ctx context.Context) error { return deleteEntity(set)(ctx, o.EntityID) }); err != nil {
			t.Fatal(err)
		}
		for _, c := range []accesscodes.AccessCode{scoped, queued} {
			if _, err := set.AccessCodes.Get(ctx, c.ID); !platform.IsCode(err, platform.CodeNotFound) {
				t.Errorf("code %s scoped to the deleted entity survived: %v", c.Code, err)
			}
		}
		if _, err := set.AccessCodes.Get(ctx, account.ID); err != nil {
			t.Errorf("account-wide code: %v", err)
		}
		// Its value is free again.
		if err := set.AccessCodes.Create(ctx, mkCode(now, o, "E", nil)); err != nil {
			t.Errorf("reuse of a deleted code's value: %v", err)
		}
	})
}

// fixedClock is a clock that always says t.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }
