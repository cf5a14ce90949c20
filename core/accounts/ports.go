package accounts

import "context"

// Every port of the module (docs/architecture.md, "Ports").

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
