package contract

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

// uowProbe is a set's unit of work with probes to watch it (newUoWProbe).
type uowProbe struct {
	UoW platform.UnitOfWork
	// AfterCommit is the unit of work's hook registration
	// (platform.UnitOfWork.AfterCommit).
	AfterCommit func(ctx context.Context, f func())
	// Record writes v to the set's storage in ctx's transaction, and
	// Recorded reads what is committed (through the accounts repository,
	// on every backend).
	Record   func(ctx context.Context, v string) error
	Recorded func(ctx context.Context) ([]string, error)
}

// uowRecorded is what the probe recorded, sorted.
func uowRecorded(t *testing.T, ctx context.Context, h uowProbe) []string {
	t.Helper()
	vs, err := h.Recorded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(vs)
	return vs
}

// RunUnitOfWork checks the platform.UnitOfWork contract.
func RunUnitOfWork(t *testing.T, newSet NewSet) {
	runUnitOfWork1(t, newSet)
	runUnitOfWork2(t, newSet)
}

// runUnitOfWork1 is part 1 of RunUnitOfWork: commit keeps the writes; an
// error rolls back and is returned as is; a panic rolls back and goes on; a
// nested Do joins the outer one.
func runUnitOfWork1(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	errFail := platform.Conflict("CONTRACT_FAIL", "the use case failed", nil)
	t.Run("commit keeps the writes", func(t *testing.T) {
		t.Parallel()
		h := newUoWProbe(t, newSet(t))
		err := h.UoW.Do(ctx, func(ctx context.Context) error {
			if err := h.Record(ctx, "a"); err != nil {
				return err
			}
			return h.Record(ctx, "b")
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := uowRecorded(t, ctx, h); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("recorded %v, want [a b]", got)
		}
	})

	t.Run("an error rolls back and is returned as is", func(t *testing.T) {
		t.Parallel()
		h := newUoWProbe(t, newSet(t))
		err := h.UoW.Do(ctx, func(ctx context.Context) error {
			if h.Record != nil {
				if err := h.Record(ctx, "dropped"); err != nil {
					return err
				}
			}
			return errFail
		})
		if e, ok := platform.AsError(err); !ok || e != errFail {
			t.Fatalf("Do = %v, want the use case's own domain error", err)
		}
		if h.Record != nil {
			if got := uowRecorded(t, ctx, h); len(got) != 0 {
				t.Fatalf("recorded %v after rollback", got)
			}
		}
	})

	t.Run("a panic rolls back and goes on", func(t *testing.T) {
		t.Parallel()
		h := newUoWProbe(t, newSet(t))
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recovered %v, want the use case's panic", r)
				}
			}()
			_ = h.UoW.Do(ctx, func(ctx context.Context) error {
				if h.Record != nil {
					if err := h.Record(ctx, "dropped"); err != nil {
						return err
					}
				}
				panic("boom")
			})
		}()
		if h.Record != nil {
			if got := uowRecorded(t, ctx, h); len(got) != 0 {
				t.Fatalf("recorded %v after a panic", got)
			}
		}
		// The adapter is still usable.
		if err := h.UoW.Do(ctx, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a nested Do joins the outer one", func(t *testing.T) {
		t.Parallel()
		h := newUoWProbe(t, newSet(t))
		err := h.UoW.Do(ctx, func(ctx context.Context) error {
			if err := h.UoW.Do(ctx, func(ctx context.Context) error { return h.Record(ctx, "inner") }); err != nil {
				return err
			}
			return errFail
		})
		if !errors.Is(err, errFail) {
			t.Fatalf("Do = %v", err)
		}
		if got := uowRecorded(t, ctx, h); len(got) != 0 {
			t.Fatalf("inner write %v survived the outer rollback", got)
		}
		err = h.UoW.Do(ctx, func(ctx context.Context) error {
			return h.UoW.Do(ctx, func(ctx context.Context) error {
				if err := h.Record(ctx, "inner"); err != nil {
					return err
				}
				return errFail
			})
		})
		if !errors.Is(err, errFail) {
			t.Fatalf("Do = %v, want the inner error", err)
		}
		if got := uowRecorded(t, ctx, h); len(got) != 0 {
			t.Fatalf("recorded %v after the inner error", got)
		}
	})
}

// runUnitOfWork2 is part 2 of RunUnitOfWork: after-commit hooks run after
// the commit, in order; after-commit hooks never run on rollback; after-
// commit outside a unit of work runs at once.
func runUnitOfWork2(t *testing.T, newSet NewSet) {
	ctx := context.Background()
	errFail := platform.Conflict("CONTRACT_FAIL", "the use case failed", nil)
	t.Run("after-commit hooks run after the commit, in order", func(t *testing.T) {
		t.Parallel()
		h := newUoWProbe(t, newSet(t))
		var ran []string
		var seen []string
		err := h.UoW.Do(ctx, func(ctx context.Context) error {
			if h.Record != nil {
				if err := h.Record(ctx, "committed"); err != nil {
					return err
				}
			}
			h.AfterCommit(ctx, func() {
				ran = append(ran, "first")
				if h.Recorded != nil {
					// Another session must already see the change.
					seen, _ = h.Recorded(context.Background())
				}
			})
			// A nested unit's hooks wait for the outer commit too.
			err := h.UoW.Do(ctx, func(ctx context.Context) error {
				h.AfterCommit(ctx, func() { ran = append(ran, "nested") })
				return nil
			})
			if len(ran) != 0 {
				t.Errorf("hooks ran before the commit: %v", ran)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ran, []string{"first", "nested"}) {
			t.Fatalf("hooks ran %v, want [first nested]", ran)
		}
		if h.Recorded != nil && !slices.Equal(seen, []string{"committed"}) {
			t.Fatalf("a hook saw %v, want the committed change", seen)
		}
	})

	t.Run("after-commit hooks never run on rollback", func(t *testing.T) {
		t.Parallel()
		h := newUoWProbe(t, newSet(t))
		ran := false
		err := h.UoW.Do(ctx, func(ctx context.Context) error {
			h.AfterCommit(ctx, func() { ran = true })
			return errFail
		})
		if !errors.Is(err, errFail) {
			t.Fatalf("Do = %v", err)
		}
		func() {
			defer func() { _ = recover() }()
			_ = h.UoW.Do(ctx, func(ctx context.Context) error {
				h.AfterCommit(ctx, func() { ran = true })
				panic("boom")
			})
		}()
		if ran {
			t.Fatal("a hook ran for a rolled-back unit of work")
		}
	})

	t.Run("after-commit outside a unit of work runs at once", func(t *testing.T) {
		t.Parallel()
		h := newUoWProbe(t, newSet(t))
		ran := false
		h.AfterCommit(ctx, func() { ran = true })
		if !ran {
			t.Fatal("hook did not run")
		}
	})
}

// newUoWProbe probes a set's unit of work through its accounts repository:
// Record stores an account named after v, Recorded lists those committed.
func newUoWProbe(t *testing.T, s adapterset.Set) uowProbe {
	var (
		mu    sync.Mutex
		tried []string
	)
	prefix := platform.NewID(platform.PrefixAccount) + "_"
	return uowProbe{
		UoW:         s.UoW,
		AfterCommit: s.UoW.AfterCommit,
		Record: func(ctx context.Context, v string) error {
			mu.Lock()
			tried = append(tried, v)
			mu.Unlock()
			now := time.Now().UTC()
			return s.Accounts.CreateAccount(ctx, accounts.Account{ID: prefix + v, Name: v, Plan: "free", CreatedAt: now, UpdatedAt: now})
		},
		Recorded: func(ctx context.Context) ([]string, error) {
			mu.Lock()
			vs := append([]string(nil), tried...)
			mu.Unlock()
			var out []string
			for _, v := range vs {
				_, err := s.Accounts.GetAccount(ctx, prefix+v)
				if platform.IsCode(err, platform.CodeNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				if !contains(out, v) {
					out = append(out, v)
				}
			}
			return out, nil
		},
	}
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}
