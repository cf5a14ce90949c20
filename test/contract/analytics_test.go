package contract_test

import (
	"testing"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestMemoryAnalytics(t *testing.T) {
	contract.RunAnalytics(t, func(t *testing.T) contract.AnalyticsHarness {
		s := memory.NewStore()
		tr, ar, wr := memory.NewTurns(s), memory.NewAppointments(s), memory.NewWorkflow(s)
		repo, err := memory.NewAnalytics(s, tr, ar, wr)
		if err != nil {
			t.Fatal(err)
		}
		owners := contract.Owners{Accounts: memory.NewAccounts(s), Entities: memory.NewEntities(s), Queues: memory.NewQueues(s), Turns: tr}
		return contract.AnalyticsHarness{Repo: repo, Owners: owners, Workflow: wr, Appointments: ar}
	})
}

func TestPostgresAnalytics(t *testing.T) {
	contract.RunAnalytics(t, func(t *testing.T) contract.AnalyticsHarness {
		db := pgtest.New(t)
		owners := contract.Owners{Accounts: postgres.NewAccounts(db), Entities: postgres.NewEntities(db), Queues: postgres.NewQueues(db), Turns: postgres.NewTurns(db)}
		return contract.AnalyticsHarness{Repo: postgres.NewAnalytics(db), Owners: owners, Workflow: postgres.NewWorkflow(db), Appointments: postgres.NewAppointments(db)}
	})
}
