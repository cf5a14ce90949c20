package accounts

import "context"

// The ports of this module: every interface it consumes, implemented
// by an adapter (storage, an outbound client) or by another module,
// in one file (docs/architecture.md, "Ports"). A port's capabilities
// are its methods: nothing here is asked for more at run time.

// Repository stores accounts and keys.
type Repository interface {
	CreateAccount(ctx context.Context, a Account) error
	GetAccount(ctx context.Context, id string) (Account, error)
	UpdateAccount(ctx context.Context, a Account) error
	CreateKey(ctx context.Context, k APIKey) error
	GetKey(ctx context.Context, id string) (APIKey, error)
	GetKeyByHash(ctx context.Context, hash string) (APIKey, error)
	ListKeys(ctx context.Context, accountID string) ([]APIKey, error)
	UpdateKey(ctx context.Context, k APIKey) error
}
