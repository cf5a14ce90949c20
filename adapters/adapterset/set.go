// Package adapterset builds the adapters of one backend as a typed set:
// one field per port, filled by one constructor per backend (Memory,
// Postgres). bootstrap provides every port field to the application, and
// the contract and core tests take a ready set instead of assembling
// adapters by hand.
//
// Set is an fx result object (fx.Out): bootstrap provides the set, and
// fx provides each of its fields under the field's type. The field is the
// provider: go-to-definition on a port type finds it here, and the value
// behind it in Memory and Postgres, keyed by field name.
//
// Adding a port is one field here and one value in each constructor.
// Missing, TestMemorySetFillsEveryPort and the contract suite's check of
// the PostgreSQL set (contract.Exercise) fail on a field a constructor
// leaves empty.
package adapterset

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/adapters/riverjobs"
	"github.com/qms-dev/qms/core/accesscodes"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/analytics"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/join"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/core/workflow"
	"github.com/qms-dev/qms/ports"
)

// Set is one backend's adapters, one field per port. Every field is
// provided to the application under its type (fx.Out), so two fields may
// not share one.
type Set struct {
	fx.Out

	UoW             platform.UnitOfWork
	Pinger          ports.Pinger
	Faults          ports.FaultClassifier
	Accounts        accounts.Repository
	Entities        entities.Repository
	Queues          queues.Repository
	Turns           turns.Repository
	Appointments    appointments.Repository
	AccessCodes     accesscodes.Repository
	AccessCodeTurns accesscodes.TurnCodes
	Workflow        workflow.Repository
	Forwards        workflow.ForwardRepository
	Analytics       analytics.Repository
	Webhooks        webhooks.Repository
	Events          events.Store
	StreamLog       stream.Log
	StreamNotifier  stream.Notifier
	Calls           display.Calls
	DisplayTokens   display.Repository
	TicketLinks     ticket.Repository
	JoinLinks       join.Repository
	Notify          notify.Repository
	NotifyAccounts  notify.AccountRepository
	CounterLinks    counter.Repository
	RateLimiter     ports.RateLimiter
	JobRunner       ports.JobRunner
	Jobs            platform.JobScheduler

	// EventCopies are adapters that keep their own copy of the event log
	// and must be subscribed to the event bus (the memory stream log). Not
	// a port: bootstrap subscribes them.
	EventCopies []events.Subscriber
	// Resealer re-seals stored webhook signing secrets at start-up; nil
	// where nothing is stored (memory).
	Resealer Resealer
}

// Resealer is the PostgreSQL webhooks repository's re-sealing of stored
// signing secrets (`qms reseal-secrets`, and at start-up those stored in
// clear).
type Resealer interface {
	ResealSecrets(ctx context.Context, all bool) (int, error)
}

// Options are what the backends need beyond their storage.
type Options struct {
	// Clock is the memory job runner's clock (tests move it).
	Clock platform.Clock
	// Logger receives the job runner's reports.
	Logger *slog.Logger
	// SecretKey seals webhook signing secrets in PostgreSQL (required
	// there); OldSecretKeys open those sealed under earlier keys.
	SecretKey     string
	OldSecretKeys []string
	// Jobs tunes the River runner of the PostgreSQL set (zero values are
	// riverjobs' defaults); the memory runner ignores it.
	Jobs riverjobs.Options
}

func (o Options) logger(component string) *slog.Logger {
	if o.Logger == nil {
		return slog.Default().With("component", component)
	}
	return o.Logger.With("component", component)
}

// Memory is the in-process set over store s.
func Memory(s *memory.Store, o Options) (Set, error) {
	if o.Clock == nil {
		o.Clock = platform.SystemClock{}
	}
	tr, ar, wf := memory.NewTurns(s), memory.NewAppointments(s), memory.NewWorkflow(s)
	an, err := memory.NewAnalytics(s, tr, ar, wf)
	if err != nil {
		return Set{}, fmt.Errorf("adapterset: memory analytics: %w", err)
	}
	log := memory.NewStreamLog(s)
	runner := memory.NewJobRunner(s, o.Clock, memory.JobRunnerOptions{Logger: o.logger("jobs")})
	qs, wh, ev, rl := memory.NewQueues(s), memory.NewWebhooks(s), memory.NewEvents(s), memory.NewRateLimiter()
	tl := memory.NewTicketLinks(s)
	nt := memory.NewNotify(s, tr, ar)
	return Set{
		UoW:             s,
		Pinger:          s,
		Faults:          s,
		Accounts:        memory.NewAccounts(s),
		Entities:        memory.NewEntities(s),
		Queues:          qs,
		Turns:           tr,
		Appointments:    ar,
		AccessCodes:     memory.NewAccessCodes(s),
		AccessCodeTurns: memory.NewAccessCodeTurns(s, tr),
		Workflow:        wf,
		Forwards:        wf,
		Analytics:       an,
		Webhooks:        wh,
		Events:          ev,
		StreamLog:       log,
		StreamNotifier:  log,
		Calls:           log,
		DisplayTokens:   memory.NewDisplayTokens(s),
		TicketLinks:     tl,
		JoinLinks:       memory.NewJoinLinks(s),
		Notify:          nt,
		NotifyAccounts:  memory.NewNotifyAccounts(s, nt),
		CounterLinks:    memory.NewCounterLinks(s),
		RateLimiter:     rl,
		JobRunner:       runner,
		Jobs:            runner,
		EventCopies:     []events.Subscriber{log},
	}, nil
}

// Postgres is the PostgreSQL set over db, with River running the jobs.
func Postgres(db *postgres.DB, o Options) (Set, error) {
	wh, err := postgres.NewWebhooks(db, o.SecretKey, o.OldSecretKeys...)
	if err != nil {
		return Set{}, err
	}
	na, err := postgres.NewNotifyAccounts(db, o.SecretKey, o.OldSecretKeys...)
	if err != nil {
		return Set{}, err
	}
	log := postgres.NewStreamLog(db)
	wf := postgres.NewWorkflow(db)
	jobs := o.Jobs
	jobs.Logger = o.logger("river")
	runner := riverjobs.New(db, jobs)
	return Set{
		UoW:             db,
		Pinger:          db,
		Faults:          db,
		Accounts:        postgres.NewAccounts(db),
		Entities:        postgres.NewEntities(db),
		Queues:          postgres.NewQueues(db),
		Turns:           postgres.NewTurns(db),
		Appointments:    postgres.NewAppointments(db),
		AccessCodes:     postgres.NewAccessCodes(db),
		AccessCodeTurns: postgres.NewAccessCodeTurns(db),
		Workflow:        wf,
		Forwards:        wf,
		Analytics:       postgres.NewAnalytics(db),
		Webhooks:        wh,
		Events:          postgres.NewEvents(db),
		StreamLog:       log,
		StreamNotifier:  postgres.NewStreamNotifier(db),
		Calls:           log,
		DisplayTokens:   postgres.NewDisplayTokens(db),
		TicketLinks:     postgres.NewTicketLinks(db),
		JoinLinks:       postgres.NewJoinLinks(db),
		Notify:          postgres.NewNotify(db),
		NotifyAccounts:  na,
		CounterLinks:    postgres.NewCounterLinks(db),
		RateLimiter:     postgres.NewRateLimiter(db),
		JobRunner:       runner,
		Jobs:            runner,
		Resealer:        wh,
		// EventCopies: none, PostgreSQL reads the stream from its own tables.
	}, nil
}

// Missing names the port fields s leaves empty: a constructor that forgot
// a port added to Set. Resealer may be empty.
func (s Set) Missing() []string {
	var out []string
	v := reflect.ValueOf(s)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); f.Type.Kind() == reflect.Interface && f.Name != "Resealer" && v.Field(i).IsNil() {
			out = append(out, f.Name)
		}
	}
	return out
}
