package memory

import (
	"context"
	"maps"
	"time"

	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/platform"
)

// AccessCodes is the memory accesscodes.Repository.
type AccessCodes struct {
	s    *Store
	rows *table[accesscodes.AccessCode]
	// byCode is the unique index (account, code) -> id; a table so that it
	// rolls back with the rows.
	byCode *table[string]
}

// NewAccessCodes builds the repository on s. A code scoped to an entity or
// a queue goes when that entity or queue is deleted, as the Postgres
// foreign keys do.
func NewAccessCodes(s *Store) *AccessCodes {
	r := &AccessCodes{s: s, rows: newTable[accesscodes.AccessCode](s), byCode: newTable[string](s)}
	for _, scope := range []string{accesscodes.ScopeEntity, accesscodes.ScopeQueue} {
		s.OnDelete(scope, func(ctx context.Context, id string) {
			for _, c := range sorted(r.rows.rows, "", 0, func(c accesscodes.AccessCode) bool {
				return c.ScopeType == scope && c.ScopeID != nil && *c.ScopeID == id
			}) {
				r.s.write(ctx, func() func() {
					u1, u2 := r.rows.del(c.ID), r.byCode.del(codeKey(c.AccountID, c.Code))
					return func() { u2(); u1() }
				})
			}
		})
	}
	return r
}

func codeKey(accountID, code string) string { return accountID + "\x00" + code }

// clone keeps callers from sharing the stored properties map.
func clone(c accesscodes.AccessCode) accesscodes.AccessCode {
	c.Properties = maps.Clone(c.Properties)
	return c
}

// Create stores a new code, refusing a duplicate.
func (r *AccessCodes) Create(ctx context.Context, c accesscodes.AccessCode) error {
	return r.CreateMany(ctx, []accesscodes.AccessCode{c})
}

// CreateMany stores every code or, on the first duplicate, none.
func (r *AccessCodes) CreateMany(ctx context.Context, cs []accesscodes.AccessCode) (err error) {
	r.s.write(ctx, func() func() {
		var undo []func()
		rollback := func() {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
		for _, c := range cs {
			k := codeKey(c.AccountID, c.Code)
			if _, dup := r.byCode.rows[k]; dup {
				rollback()
				err = accesscodes.DuplicateError(c.Code)
				return nil
			}
			undo = append(undo, r.rows.put(c.ID, clone(c)), r.byCode.put(k, c.ID))
		}
		return rollback
	})
	return err
}

// Get returns a code.
func (r *AccessCodes) Get(ctx context.Context, id string) (c accesscodes.AccessCode, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if c, ok = r.rows.rows[id]; !ok {
			err = platform.NotFound("access code", id)
		}
		c = clone(c)
	})
	return c, err
}

// GetByCode finds the account's code by value.
func (r *AccessCodes) GetByCode(ctx context.Context, accountID, code string) (c accesscodes.AccessCode, err error) {
	r.s.read(ctx, func() {
		id, ok := r.byCode.rows[codeKey(accountID, code)]
		if !ok {
			err = platform.NotFound("access code", code)
			return
		}
		c = clone(r.rows.rows[id])
	})
	return c, err
}

// Existing returns those of codes the account already has.
func (r *AccessCodes) Existing(ctx context.Context, accountID string, codes []string) (out []string, err error) {
	r.s.read(ctx, func() {
		for _, code := range codes {
			if _, ok := r.byCode.rows[codeKey(accountID, code)]; ok {
				out = append(out, code)
			}
		}
	})
	return out, nil
}

// Update replaces a code; its value never changes.
func (r *AccessCodes) Update(ctx context.Context, c accesscodes.AccessCode) error {
	r.s.write(ctx, func() func() { return r.rows.put(c.ID, clone(c)) })
	return nil
}

// List pages the account's codes by id.
func (r *AccessCodes) List(ctx context.Context, accountID string, page platform.PageRequest) (out []accesscodes.AccessCode, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.rows.rows, page.After, page.Limit+1, func(c accesscodes.AccessCode) bool { return c.AccountID == accountID })
		for i := range out {
			out[i] = clone(out[i])
		}
	})
	return out, nil
}

// Lock does nothing: units of work are serialised by the store.
func (r *AccessCodes) Lock(context.Context, string) error { return nil }

// TakeUse checks and counts a use under the store's write lock, which makes
// the pair atomic as the conditional UPDATE does on Postgres.
func (r *AccessCodes) TakeUse(ctx context.Context, id string, now time.Time) (c accesscodes.AccessCode, ok bool, err error) {
	r.s.write(ctx, func() func() {
		row, found := r.rows.rows[id]
		if !found {
			err = platform.NotFound("access code", id)
			return nil
		}
		if !row.Enabled || row.Expired(now) || row.Exhausted() {
			return nil
		}
		row.Uses++
		row.UpdatedAt = now
		c, ok = clone(row), true
		return r.rows.put(id, row)
	})
	return c, ok, err
}
