package contract_test

import (
	"testing"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/test/contract"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestMemoryEventLog(t *testing.T) {
	contract.RunEventLog(t, func(t *testing.T) contract.EventLogHarness {
		s := memory.NewStore()
		l := memory.NewStreamLog(s)
		return contract.EventLogHarness{UoW: s, Log: memory.NewEvents(s), Stream: l, Calls: l, Account: "acc_a",
			Subscribers: []events.Subscriber{l}}
	})
}

func TestPostgresEventLog(t *testing.T) {
	contract.RunEventLog(t, func(t *testing.T) contract.EventLogHarness {
		db := pgtest.New(t)
		pgAccount(t, db, "acc_a")
		l := postgres.NewStreamLog(db)
		return contract.EventLogHarness{UoW: db, Log: postgres.NewEvents(db), Stream: l, Calls: l, Account: "acc_a"}
	})
}
