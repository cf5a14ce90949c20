package memory

import (
	"context"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

// Accounts is the memory accounts.Repository.
type Accounts struct {
	s        *Store
	accounts *table[accounts.Account]
	keys     *table[accounts.APIKey]
	byHash   map[string]string
}

// NewAccounts builds the repository on s.
func NewAccounts(s *Store) *Accounts {
	return &Accounts{s: s, accounts: newTable[accounts.Account](s), keys: newTable[accounts.APIKey](s), byHash: map[string]string{}}
}

// CreateAccount stores a new account.
func (r *Accounts) CreateAccount(ctx context.Context, a accounts.Account) error {
	r.s.write(ctx, func() func() { return r.accounts.put(a.ID, a) })
	return nil
}

// GetAccount returns an account.
func (r *Accounts) GetAccount(ctx context.Context, id string) (a accounts.Account, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if a, ok = r.accounts.rows[id]; !ok {
			err = platform.NotFound("account", id)
		}
	})
	return a, err
}

// UpdateAccount replaces an account.
func (r *Accounts) UpdateAccount(ctx context.Context, a accounts.Account) error {
	r.s.write(ctx, func() func() { return r.accounts.put(a.ID, a) })
	return nil
}

// CreateKey stores a new key.
func (r *Accounts) CreateKey(ctx context.Context, k accounts.APIKey) error {
	r.s.write(ctx, func() func() {
		undo := r.keys.put(k.ID, k)
		r.byHash[k.Hash] = k.ID
		return func() { undo(); delete(r.byHash, k.Hash) }
	})
	return nil
}

// GetKey returns a key.
func (r *Accounts) GetKey(ctx context.Context, id string) (k accounts.APIKey, err error) {
	r.s.read(ctx, func() {
		var ok bool
		if k, ok = r.keys.rows[id]; !ok {
			err = platform.NotFound("api key", id)
		}
	})
	return k, err
}

// GetKeyByHash finds a key by the hash of its value.
func (r *Accounts) GetKeyByHash(ctx context.Context, hash string) (k accounts.APIKey, err error) {
	r.s.read(ctx, func() {
		id, ok := r.byHash[hash]
		if ok {
			k, ok = r.keys.rows[id]
		}
		if !ok {
			err = platform.NotFound("api key", "")
		}
	})
	return k, err
}

// ListKeys lists an account's keys, oldest first.
func (r *Accounts) ListKeys(ctx context.Context, accountID string) (out []accounts.APIKey, err error) {
	r.s.read(ctx, func() {
		out = sorted(r.keys.rows, "", 0, func(k accounts.APIKey) bool { return k.AccountID == accountID })
	})
	return out, nil
}

// UpdateKey replaces a key.
func (r *Accounts) UpdateKey(ctx context.Context, k accounts.APIKey) error {
	r.s.write(ctx, func() func() { return r.keys.put(k.ID, k) })
	return nil
}
