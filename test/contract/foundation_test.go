package contract_test

import (
	"testing"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestMemoryFoundationRepositories(t *testing.T) {
	contract.RunFoundationRepositories(t, func(t *testing.T) contract.FoundationHarness {
		s := memory.NewStore()
		q := memory.NewQueues(s) // registers the entity cascade
		return contract.FoundationHarness{UoW: s, Accounts: memory.NewAccounts(s), Entities: memory.NewEntities(s), Queues: q}
	})
}

func TestPostgresFoundationRepositories(t *testing.T) {
	contract.RunFoundationRepositories(t, func(t *testing.T) contract.FoundationHarness {
		db := pgtest.New(t)
		return contract.FoundationHarness{UoW: db, Accounts: postgres.NewAccounts(db), Entities: postgres.NewEntities(db), Queues: postgres.NewQueues(db)}
	})
}
