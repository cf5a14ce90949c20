package contract_test

import (
	"testing"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestMemoryPruner(t *testing.T) {
	contract.RunPruner(t, func(t *testing.T) contract.RetentionHarness {
		s := memory.NewStore()
		qs, tr := memory.NewQueues(s), memory.NewTurns(s)
		ev, wh, wf, rl := memory.NewEvents(s), memory.NewWebhooks(s), memory.NewWorkflow(s), memory.NewRateLimiter()
		return contract.RetentionHarness{
			Pruner:   memory.NewPruner(s, ev, wh, tr, qs, wf, rl),
			Owners:   contract.Owners{Accounts: memory.NewAccounts(s), Entities: memory.NewEntities(s), Queues: qs, Turns: tr},
			Events:   ev,
			Webhooks: wh,
			Forwards: wf,
			Limiter:  rl,
		}
	})
}

func TestPostgresPruner(t *testing.T) {
	contract.RunPruner(t, func(t *testing.T) contract.RetentionHarness {
		db := pgtest.New(t)
		wh, err := postgres.NewWebhooks(db, "a key of at least thirty-two characters")
		if err != nil {
			t.Fatal(err)
		}
		return contract.RetentionHarness{
			Pruner: postgres.NewPruner(db),
			Owners: contract.Owners{Accounts: postgres.NewAccounts(db), Entities: postgres.NewEntities(db),
				Queues: postgres.NewQueues(db), Turns: postgres.NewTurns(db)},
			Events:   postgres.NewEvents(db),
			Webhooks: wh,
			Forwards: postgres.NewWorkflow(db),
			Limiter:  postgres.NewRateLimiter(db),
		}
	})
}
