package contract_test

import (
	"context"
	"testing"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func memoryWorkflow(*testing.T) contract.WorkflowHarness {
	s := memory.NewStore()
	ents := memory.NewEntities(s)
	owners := contract.Owners{Accounts: memory.NewAccounts(s), Entities: ents, Queues: memory.NewQueues(s), Turns: memory.NewTurns(s)}
	// The memory cascade runs inside a unit of work, as the service calls it.
	del := func(ctx context.Context, id string) error {
		return s.Do(ctx, func(ctx context.Context) error { return ents.Delete(ctx, id) })
	}
	return contract.WorkflowHarness{Repo: memory.NewWorkflow(s), UoW: s, Owners: owners, DeleteEntity: del}
}

func TestMemoryWorkflow(t *testing.T) { contract.RunWorkflow(t, memoryWorkflow) }

func TestMemoryForwards(t *testing.T) { contract.RunForwards(t, memoryWorkflow) }

func postgresWorkflow(t *testing.T) contract.WorkflowHarness {
	db := pgtest.New(t)
	ents := postgres.NewEntities(db)
	owners := contract.Owners{Accounts: postgres.NewAccounts(db), Entities: ents, Queues: postgres.NewQueues(db), Turns: postgres.NewTurns(db)}
	return contract.WorkflowHarness{Repo: postgres.NewWorkflow(db), UoW: db, Owners: owners, DeleteEntity: ents.Delete}
}

func TestPostgresWorkflow(t *testing.T) { contract.RunWorkflow(t, postgresWorkflow) }

func TestPostgresForwards(t *testing.T) { contract.RunForwards(t, postgresWorkflow) }
