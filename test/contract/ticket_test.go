package contract_test

import (
	"testing"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestMemoryTicketLinks(t *testing.T) {
	contract.RunTicketLinks(t, func(t *testing.T) contract.TicketLinksHarness {
		s := memory.NewStore()
		owners := contract.Owners{Accounts: memory.NewAccounts(s), Entities: memory.NewEntities(s), Queues: memory.NewQueues(s),
			Turns: memory.NewTurns(s)}
		return contract.TicketLinksHarness{Repo: memory.NewTicketLinks(s), UoW: s, Owners: owners}
	})
}

func TestPostgresTicketLinks(t *testing.T) {
	contract.RunTicketLinks(t, func(t *testing.T) contract.TicketLinksHarness {
		db := pgtest.New(t)
		owners := contract.Owners{Accounts: postgres.NewAccounts(db), Entities: postgres.NewEntities(db), Queues: postgres.NewQueues(db),
			Turns: postgres.NewTurns(db)}
		return contract.TicketLinksHarness{Repo: postgres.NewTicketLinks(db), UoW: db, Owners: owners}
	})
}
