package contract_test

import (
	"testing"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestMemoryAccessCodes(t *testing.T) {
	contract.RunAccessCodes(t, func(t *testing.T) contract.AccessCodesHarness {
		s := memory.NewStore()
		ents := memory.NewEntities(s)
		owners := contract.Owners{Accounts: memory.NewAccounts(s), Entities: ents, Queues: memory.NewQueues(s)}
		return contract.AccessCodesHarness{Repo: memory.NewAccessCodes(s), UoW: s, Owners: owners, DeleteEntity: ents.Delete}
	})
}

func TestPostgresAccessCodes(t *testing.T) {
	contract.RunAccessCodes(t, func(t *testing.T) contract.AccessCodesHarness {
		db := pgtest.New(t)
		ents := postgres.NewEntities(db)
		owners := contract.Owners{Accounts: postgres.NewAccounts(db), Entities: ents, Queues: postgres.NewQueues(db)}
		return contract.AccessCodesHarness{Repo: postgres.NewAccessCodes(db), UoW: db, Owners: owners, DeleteEntity: ents.Delete}
	})
}
