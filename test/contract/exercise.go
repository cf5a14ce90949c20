package contract

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/ports"
	"github.com/qms-dev/qms/test/testkit"
)

// NewSet builds a fresh, empty adapter set of one backend for a subtest.
type NewSet func(t *testing.T) adapterset.Set

// Option tunes Exercise to a backend.
type Option func(*options)

type options struct{ concurrent bool }

// Concurrent says the backend runs transactions side by side (PostgreSQL),
// so the suites also check row locks and SKIP LOCKED.
func Concurrent(o *options) { o.concurrent = true }

// Exercise runs every port's suite against the backend newSet builds, each
// suite on sets of its own: call it once per backend (River's driver test
// idea). A port added to adapterset.Set gets its suite here, once, and both
// backends run it.
func Exercise(t *testing.T, newSet NewSet, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	t.Run("Turns", func(t *testing.T) {
		t.Parallel()
		RunTurns(t, func(t *testing.T) TurnsHarness {
			s := newSet(t)
			return TurnsHarness{UoW: s.UoW, Turns: s.Turns, Entities: s.Entities, Owners: OwnersOf(s), Concurrent: o.concurrent}
		})
	})
	t.Run("TurnLocks", func(t *testing.T) {
		t.Parallel()
		RunTurnLocks(t, func(t *testing.T) TurnsHarness {
			s := newSet(t)
			return TurnsHarness{UoW: s.UoW, Turns: s.Turns, Entities: s.Entities, Owners: OwnersOf(s), Concurrent: o.concurrent}
		})
	})
	t.Run("Appointments", func(t *testing.T) { t.Parallel(); RunAppointments(t, newSet) })
	t.Run("AppointmentRaces", func(t *testing.T) { t.Parallel(); RunAppointmentRaces(t, newSet) })
	t.Run("AppointmentsWaitingToJoin", func(t *testing.T) { t.Parallel(); RunAppointmentsWaitingToJoin(t, newSet) })
	t.Run("UnitOfWork", func(t *testing.T) {
		t.Parallel()
		RunUnitOfWork(t, func(t *testing.T) UnitOfWorkHarness { return unitOfWork(t, newSet(t)) })
	})
	t.Run("Foundation", func(t *testing.T) {
		t.Parallel()
		RunFoundationRepositories(t, func(t *testing.T) FoundationHarness {
			s := newSet(t)
			return FoundationHarness{UoW: s.UoW, Accounts: s.Accounts, Entities: s.Entities, Queues: s.Queues}
		})
	})
	t.Run("AccessCodes", func(t *testing.T) {
		t.Parallel()
		RunAccessCodes(t, func(t *testing.T) AccessCodesHarness {
			s := newSet(t)
			return AccessCodesHarness{Repo: s.AccessCodes, UoW: s.UoW, Owners: OwnersOf(s), DeleteEntity: deleteEntity(s)}
		})
	})
	t.Run("Analytics", func(t *testing.T) {
		t.Parallel()
		RunAnalytics(t, func(t *testing.T) AnalyticsHarness {
			s := newSet(t)
			return AnalyticsHarness{Repo: s.Analytics, Owners: OwnersOf(s), Workflow: s.Forwards, Appointments: s.Appointments}
		})
	})
	workflowOf := func(t *testing.T) WorkflowHarness {
		s := newSet(t)
		repo, ok := s.Workflow.(interface {
			workflow.Repository
			workflow.ForwardRepository
		})
		if !ok {
			t.Fatalf("%T keeps links but not forwards", s.Workflow)
		}
		return WorkflowHarness{Repo: repo, UoW: s.UoW, Owners: OwnersOf(s), DeleteEntity: deleteEntity(s)}
	}
	t.Run("Workflow", func(t *testing.T) { t.Parallel(); RunWorkflow(t, workflowOf) })
	t.Run("Forwards", func(t *testing.T) { t.Parallel(); RunForwards(t, workflowOf) })
	t.Run("EventLog", func(t *testing.T) {
		t.Parallel()
		RunEventLog(t, func(t *testing.T) EventLogHarness {
			s := newSet(t)
			return EventLogHarness{UoW: s.UoW, Log: eventLog(t, s), Stream: s.StreamLog, Calls: s.Calls,
				Account: NewAccount(t, s), Subscribers: s.EventCopies}
		})
	})
	t.Run("Webhooks", func(t *testing.T) {
		t.Parallel()
		RunWebhooks(t, func(t *testing.T) WebhooksHarness {
			s := newSet(t)
			return WebhooksHarness{Repo: s.Webhooks, UoW: s.UoW, NewAccount: func(t *testing.T, id string) { newAccountID(t, s, id) }}
		})
	})
	t.Run("EventFanOut", func(t *testing.T) { t.Parallel(); RunEventFanOut(t, newSet) })
	t.Run("TicketLinks", func(t *testing.T) {
		t.Parallel()
		RunTicketLinks(t, func(t *testing.T) TicketLinksHarness {
			s := newSet(t)
			return TicketLinksHarness{Repo: s.TicketLinks, UoW: s.UoW, Owners: OwnersOf(s)}
		})
	})
	t.Run("CounterLinks", func(t *testing.T) {
		t.Parallel()
		RunCounterLinks(t, func(t *testing.T) CounterLinksHarness {
			s := newSet(t)
			return CounterLinksHarness{Repo: s.CounterLinks, UoW: s.UoW, Owners: OwnersOf(s)}
		})
	})
	eventLogOf := func(t *testing.T) EventLogHarness {
		s := newSet(t)
		return EventLogHarness{UoW: s.UoW, Log: eventLog(t, s), Stream: s.StreamLog, Calls: s.Calls,
			Account: NewAccount(t, s), Subscribers: s.EventCopies}
	}
	t.Run("StreamLog", func(t *testing.T) { t.Parallel(); RunStreamLogPositions(t, eventLogOf) })
	t.Run("StreamNotifier", func(t *testing.T) {
		t.Parallel()
		RunStreamNotifier(t, func(t *testing.T) StreamNotifierHarness {
			s := newSet(t)
			return StreamNotifierHarness{UoW: s.UoW, Bus: Subscribe(s), Notifier: s.StreamNotifier, Account: NewAccount(t, s)}
		})
	})
	t.Run("Notify", func(t *testing.T) {
		t.Parallel()
		RunNotify(t, func(t *testing.T) NotifyHarness {
			s := newSet(t)
			return NotifyHarness{Repo: s.Notify, UoW: s.UoW, Owners: OwnersOf(s), Concurrent: o.concurrent}
		})
	})
	t.Run("NotifyAccounts", func(t *testing.T) {
		t.Parallel()
		RunNotifyAccounts(t, func(t *testing.T) NotifyAccountsHarness {
			s := newSet(t)
			return NotifyAccountsHarness{Repo: s.NotifyAccounts, Msgs: s.Notify, UoW: s.UoW, Owners: OwnersOf(s)}
		})
	})
	t.Run("JoinLinks", func(t *testing.T) {
		t.Parallel()
		RunJoinLinks(t, func(t *testing.T) JoinLinksHarness {
			s := newSet(t)
			return JoinLinksHarness{Repo: s.JoinLinks, UoW: s.UoW, Owners: OwnersOf(s)}
		})
	})
	t.Run("DisplayTokens", func(t *testing.T) {
		t.Parallel()
		RunDisplayTokens(t, func(t *testing.T) DisplayTokensHarness {
			s := newSet(t)
			return DisplayTokensHarness{Repo: s.DisplayTokens, UoW: s.UoW, Owners: OwnersOf(s)}
		})
	})
	t.Run("RateLimiter", func(t *testing.T) {
		t.Parallel()
		RunRateLimiter(t, func(t *testing.T) ports.RateLimiter { return newSet(t).RateLimiter })
	})
	t.Run("Pruner", func(t *testing.T) {
		t.Parallel()
		RunPruner(t, func(t *testing.T) RetentionHarness {
			s := newSet(t)
			return RetentionHarness{Turns: s.Turns, Owners: OwnersOf(s), Events: eventLog(t, s), Webhooks: s.Webhooks,
				Forwards: s.Forwards, Limiter: s.RateLimiter, TicketLinks: s.TicketLinks}
		})
	})
	t.Run("JobRunner", func(t *testing.T) {
		t.Parallel()
		RunJobRunner(t, func(t *testing.T) JobRunnerHarness {
			s := newSet(t)
			return JobRunnerHarness{Runner: s.JobRunner, UoW: s.UoW}
		})
	})
}

// OwnersOf is the builder over a set's repositories.
func OwnersOf(s adapterset.Set) Owners { return testkit.OwnersOf(s) }

// NewAccount stores a fresh account in the set and returns its id.
func NewAccount(t *testing.T, s adapterset.Set) string {
	t.Helper()
	id := platform.NewID(platform.PrefixAccount)
	newAccountID(t, s, id)
	return id
}

func newAccountID(t *testing.T, s adapterset.Set, id string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	err := s.Accounts.CreateAccount(context.Background(), accounts.Account{ID: id, Name: "Contract", Plan: "premium", CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
}

// deleteEntity deletes an entity in a unit of work, as the entities
// service does (the memory cascade runs inside one).
func deleteEntity(s adapterset.Set) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		return s.UoW.Do(ctx, func(ctx context.Context) error { return s.Entities.Delete(ctx, id) })
	}
}

func eventLog(t *testing.T, s adapterset.Set) EventLog {
	l, ok := s.Events.(EventLog)
	if !ok {
		t.Fatalf("%T cannot list the events it stores", s.Events)
	}
	return l
}

// unitOfWork probes a set's unit of work through its accounts repository:
// Record stores an account named after v, Recorded lists those committed.
func unitOfWork(t *testing.T, s adapterset.Set) UnitOfWorkHarness {
	hooks, ok := s.UoW.(interface {
		AfterCommit(ctx context.Context, f func())
	})
	if !ok {
		t.Fatalf("%T has no AfterCommit", s.UoW)
	}
	var (
		mu    sync.Mutex
		tried []string
	)
	prefix := platform.NewID(platform.PrefixAccount) + "_"
	return UnitOfWorkHarness{
		UoW:         s.UoW,
		AfterCommit: hooks.AfterCommit,
		Record: func(ctx context.Context, v string) error {
			mu.Lock()
			tried = append(tried, v)
			mu.Unlock()
			now := time.Now().UTC()
			return s.Accounts.CreateAccount(ctx, accounts.Account{ID: prefix + v, Name: v, Plan: "free", CreatedAt: now, UpdatedAt: now})
		},
		Recorded: func(ctx context.Context) ([]string, error) {
			mu.Lock()
			vs := append([]string(nil), tried...)
			mu.Unlock()
			var out []string
			for _, v := range vs {
				_, err := s.Accounts.GetAccount(ctx, prefix+v)
				if platform.IsCode(err, platform.CodeNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				if !contains(out, v) {
					out = append(out, v)
				}
			}
			return out, nil
		},
	}
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// Subscribe returns a bus over the set's event store with the set's event
// copies subscribed, as bootstrap wires it.
func Subscribe(s adapterset.Set) *events.Bus { return testkit.Bus(s) }
